/* runs_client.c: the client side of runs (sandbox.h, section "runs"): streaming, stdin, signals,
 * background runs. Used by the FastCGI workers, which never hold the sandbox's privileges. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "wire.h"

/* The first tick of a streamed run (see sbx_client_run_stream). */
#define SBX_RUN_FIRST_TICK_MS 50

static int fail(struct sbx_result *res, int rc, const char *what, const char *detail)
{
	res->status = SBX_INTERNAL_ERROR;
	snprintf(res->message, sizeof res->message, "%s%s%s", what, detail ? ": " : "",
		 detail ? detail : "");
	return rc;
}

/* Deliver bytes [from, len) of a final stream that were not delivered as they came. */
static int deliver_rest(sbx_output_fn fn, void *arg, int stream, const char *buf, size_t len,
			size_t from)
{
	while (from < len) {
		size_t n = len - from > SBX_WIRE_MAX_FRAME ? SBX_WIRE_MAX_FRAME : len - from;

		if (fn(arg, stream, buf + from, n))
			return -1;
		from += n;
	}
	return 0;
}

/* Append n bytes of held stdin (and its eof) to spec->held: only a compile step's, at most
 * SBX_RUN_MAX_STDIN in all, nothing after the eof. 0 or -1. */
static int held_add(const struct sbx_run_spec *spec, const char *data, size_t n, bool eof)
{
	struct sbx_run_held *h = spec && spec->compile ? spec->held : NULL;
	char *p;

	if (!h || h->eof || h->len + n > SBX_RUN_MAX_STDIN)
		return -1;
	if (n) {
		p = realloc(h->data, h->len + n);
		if (!p)
			return -1;
		memcpy(p + h->len, data, n);
		h->data = p;
		h->len += n;
	}
	h->eof = eof;
	return 0;
}

/* given: a connection to the broker already made (taken over), or -1 to connect to socket_path. */
static int run_stream(const char *socket_path, int given, const struct sbx_request *req,
		      const struct sbx_run_spec *spec, sbx_output_fn on_output, void *arg,
		      struct sbx_result *res)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	char *strings = NULL, *frame = NULL, *buf = NULL;
	int fd = given, fds[SBX_WIRE_MAX_FDS], nfds = 0, rc = -1;
	size_t delivered[2] = {0, 0};
	/* The first tick comes SBX_RUN_FIRST_TICK_MS in (a streamed answer sends its held start
	 * event then, fcgi/handlers/run_stream.c), the next ones every SBX_RUN_TICK_MS. */
	uint64_t last = sbx_now_ms() - (SBX_RUN_TICK_MS - SBX_RUN_FIRST_TICK_MS);
	enum sbx_wire_err e;

	memset(res, 0, sizeof *res);
	e = sbx_wire_encode_run(req, &h, &strings, fds, &nfds);
	if (e != SBX_WIRE_OK) {
		rc = e == SBX_WIRE_NOMEM
			 ? fail(res, -ENOMEM, "out of memory", NULL)
			 : fail(res, -EINVAL, "invalid request",
				e == SBX_WIRE_BAD_STRINGS ? "an environment entry is not KEY=VALUE"
							  : "too many or too long arguments");
		goto out;
	}
	h.op = SBX_OP_RUN_STREAM;
	if (sbx_wire_spec_to_run(spec, &w) != SBX_WIRE_OK ||
	    sbx_wire_check_run(&h, &w) != SBX_WIRE_OK) {
		rc = fail(res, -EINVAL, "invalid request",
			  "bad run spec (id, owner, session, or interactive with stdin or no id)");
		goto out;
	}
	frame = malloc(SBX_WIRE_MAX_FRAME);
	if (!frame) {
		rc = fail(res, -ENOMEM, "out of memory", NULL);
		goto out;
	}
	if (fd < 0)
		fd = sbx_client_connect(socket_path);
	if (fd < 0) {
		int err = errno;

		rc = err == EAGAIN
			 ? fail(res, -EAGAIN, "all sandbox slots are busy", NULL)
			 : fail(res, -err, "cannot reach the sandbox broker", strerror(err));
		goto out;
	}
	buf = malloc(sizeof h + sizeof w);
	if (!buf) {
		rc = fail(res, -ENOMEM, "out of memory", NULL);
		goto out;
	}
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, &w, sizeof w);
	if (sbx_send_fds(fd, buf, sizeof h + sizeof w, fds, nfds) < 0 ||
	    (h.strings_len && sbx_write_all(fd, strings, h.strings_len) < 0)) {
		rc = fail(res, -EPIPE, "sending to the sandbox broker failed", NULL);
		goto out;
	}
	for (;;) {
		struct pollfd pf[2] = {{fd, POLLIN, 0}, {req->cancel_fd, POLLIN, 0}};
		struct sbx_wire_frame f;
		uint64_t now = sbx_now_ms();
		int tmo = (int)(last + SBX_RUN_TICK_MS > now ? last + SBX_RUN_TICK_MS - now : 0), n;

		n = poll(pf, req->cancel_fd >= 0 ? 2 : 1, tmo);
		if (n < 0 && errno != EINTR) {
			rc = fail(res, -EIO, "poll", strerror(errno));
			goto out;
		}
		if (n > 0 && req->cancel_fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP))) {
			rc = fail(res, -ECANCELED, "the run was cancelled", NULL);
			goto out;
		}
		if (n <= 0 || !(pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (sbx_now_ms() >= last + SBX_RUN_TICK_MS) {
				last = sbx_now_ms();
				if (on_output && on_output(arg, 0, NULL, 0)) {
					rc = fail(res, -ECANCELED, "the run was cancelled", NULL);
					goto out;
				}
			}
			continue;
		}
		if (sbx_read_all(fd, &f, sizeof f) < 0 ||
		    (e = sbx_wire_check_frame(&f)) != SBX_WIRE_OK) {
			rc = fail(res, -EPROTO, "the sandbox broker closed the connection", NULL);
			goto out;
		}
		if (f.stream == SBX_WIRE_FRAME_END)
			break;
		if (f.len && sbx_read_all(fd, frame, (size_t)f.len) < 0) {
			rc = fail(res, -EPROTO, "the sandbox broker closed the connection", NULL);
			goto out;
		}
		if (f.stream == SBX_WIRE_FRAME_STDIN || f.stream == SBX_WIRE_FRAME_STDIN_EOF) {
			/* the stdin held during a compile step, for the run that follows */
			if (held_add(spec, frame, f.stream == SBX_WIRE_FRAME_STDIN ? f.len : 0,
				     f.stream == SBX_WIRE_FRAME_STDIN_EOF) < 0) {
				rc = fail(res, -EPROTO,
					  "the sandbox broker held stdin it should not", NULL);
				goto out;
			}
			continue;
		}
		delivered[f.stream - 1] += (size_t)f.len;
		last = sbx_now_ms();
		if (on_output && on_output(arg, (int)f.stream, frame, (size_t)f.len)) {
			rc = fail(res, -ECANCELED, "the run was cancelled", NULL);
			goto out;
		}
	}
	e = sbx_wire_recv_result(fd, res, &rc);
	if (e != SBX_WIRE_OK) {
		rc = fail(res, -EPROTO, "the sandbox broker sent a malformed answer",
			  sbx_wire_strerror(e));
		goto out;
	}
	/* What was delivered is a prefix of the result, by construction; a broker that says
	 * otherwise is not believed. */
	if (delivered[0] > res->out_len || delivered[1] > res->err_len) {
		sbx_result_free(res);
		rc =
		    fail(res, -EPROTO, "the sandbox broker sent more output than its result", NULL);
		goto out;
	}
	if (on_output && (deliver_rest(on_output, arg, 1, res->out, res->out_len, delivered[0]) ||
			  deliver_rest(on_output, arg, 2, res->err, res->err_len, delivered[1]))) {
		sbx_result_free(res);
		rc = fail(res, -ECANCELED, "the run was cancelled", NULL);
		goto out;
	}
out:
	if (!res->out)
		res->out = calloc(1, 1);
	if (!res->err)
		res->err = calloc(1, 1);
	free(buf);
	free(frame);
	free(strings);
	if (fd >= 0)
		close(fd);
	return rc;
}

int sbx_client_run_stream(const char *socket_path, const struct sbx_request *req,
			  const struct sbx_run_spec *spec, sbx_output_fn on_output, void *arg,
			  struct sbx_result *res)
{
	return run_stream(socket_path, -1, req, spec, on_output, arg, res);
}

int sbx_client_run_stream_on(int fd, const struct sbx_request *req, const struct sbx_run_spec *spec,
			     sbx_output_fn on_output, void *arg, struct sbx_result *res)
{
	return run_stream(NULL, fd, req, spec, on_output, arg, res);
}

/* A STDIN or SIGNAL request to the control socket; the broker's rc. */
static int run_control(const char *socket_path, uint32_t op, const char *id, const char *owner,
		       const void *data, size_t len, bool eof, int sig)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_res r;
	char path[256], hdr[sizeof h + sizeof w];
	int fd, rc;

	if (!id || !owner || strlen(id) != SBX_RUN_ID_LEN || strlen(owner) >= sizeof w.owner ||
	    len > SBX_RUN_MAX_STDIN || (len && !data))
		return -EINVAL;
	sbx_wire_encode_run_op(op, &h, &w);
	memcpy(w.id, id, SBX_RUN_ID_LEN);
	memcpy(w.owner, owner, strlen(owner));
	w.data_len = (uint32_t)len;
	w.eof = eof;
	w.sig = (uint32_t)sig;
	if (sbx_wire_check_run(&h, &w) != SBX_WIRE_OK)
		return -EINVAL;
	snprintf(path, sizeof path, "%s-health", socket_path);
	fd = sbx_client_connect(path);
	if (fd < 0)
		return -errno;
	memcpy(hdr, &h, sizeof h);
	memcpy(hdr + sizeof h, &w, sizeof w);
	{
		/* the run's slot answers between two turns of its supervisor: a slot that never
		 * does must not hold the caller */
		struct timeval tv = {10, 0};

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	}
	rc = -EPROTO;
	if (sbx_write_all(fd, hdr, sizeof hdr) == 0 &&
	    (!len || sbx_write_all(fd, data, len) == 0) &&
	    sbx_wire_recv_res(fd, op, &r) == SBX_WIRE_OK)
		rc = r.rc;
	else if (sbx_wire_recv_res(fd, op, &r) == SBX_WIRE_OK) /* refused before the data */
		rc = r.rc;
	close(fd);
	return rc;
}

/* A run whose compile step has ended and whose program is being started answers -EINPROGRESS:
 * the request is sent again (nothing of it was taken) until the program runs, for at most
 * RUN_STARTING_WAIT_MS; then the caller is told to retry (-EAGAIN). */
#define RUN_STARTING_WAIT_MS 3000

static int run_control_waiting(const char *socket_path, uint32_t op, const char *id,
			       const char *owner, const void *data, size_t len, bool eof, int sig)
{
	uint64_t until = sbx_now_ms() + RUN_STARTING_WAIT_MS;
	int rc;

	while ((rc = run_control(socket_path, op, id, owner, data, len, eof, sig)) ==
	       -EINPROGRESS) {
		struct timespec ts = {0, 10 * 1000000L};

		if (sbx_now_ms() >= until)
			return -EAGAIN;
		nanosleep(&ts, NULL);
	}
	return rc;
}

int sbx_client_run_stdin(const char *socket_path, const char *id, const char *owner,
			 const void *data, size_t len, bool eof)
{
	return run_control_waiting(socket_path, SBX_OP_RUN_STDIN, id, owner, data, len, eof, 0);
}

int sbx_client_run_signal(const char *socket_path, const char *id, const char *owner, int sig)
{
	if (sig != SIGINT && sig != SIGTERM && sig != SIGKILL)
		return -EINVAL;
	return run_control_waiting(socket_path, SBX_OP_RUN_SIGNAL, id, owner, NULL, 0, false, sig);
}

/* ---- background runs ---- */

/* Connect to the control socket and send header + run part (+ fds, strings). */
static int bg_send(const char *socket_path, const struct sbx_wire_req *h,
		   const struct sbx_wire_run *w, const int *fds, int nfds, const char *strings)
{
	char path[256], hdr[sizeof *h + sizeof *w];
	int fd;

	snprintf(path, sizeof path, "%s-health", socket_path);
	memcpy(hdr, h, sizeof *h);
	memcpy(hdr + sizeof *h, w, sizeof *w);
	/* The main process gives a connection 200 ms to say what it wants, then hangs up: a caller
	 * descheduled that long between connect and send (a loaded machine) finds the connection
	 * closed. The request never reached the broker (it is read whole before anything is done),
	 * so sending it again on a new connection is safe for every operation. */
	for (int attempt = 0;; attempt++) {
		fd = sbx_client_connect(path);
		if (fd < 0)
			return -errno;
		if (sbx_send_fds(fd, hdr, sizeof hdr, fds, nfds) == 0 &&
		    (!h->strings_len || sbx_write_all(fd, strings, h->strings_len) == 0))
			return fd;
		close(fd);
		if (attempt == 2)
			return -EPIPE;
	}
}

static int bg_recv(int fd, uint32_t op, struct sbx_wire_bg_res *r)
{
	if (sbx_read_all(fd, r, sizeof *r) < 0 || sbx_wire_check_bg_res(r, op) != SBX_WIRE_OK)
		return -EPROTO;
	return 0;
}

static int bg_simple(const char *socket_path, uint32_t op, const char *id, const char *owner,
		     struct sbx_wire_run *w, struct sbx_wire_req *h)
{
	if (!owner || strlen(owner) >= sizeof w->owner || (id && strlen(id) != SBX_RUN_ID_LEN))
		return -EINVAL;
	sbx_wire_encode_run_op(op, h, w);
	if (id)
		memcpy(w->id, id, SBX_RUN_ID_LEN);
	memcpy(w->owner, owner, strlen(owner));
	(void)socket_path;
	return 0;
}

int sbx_client_run_start(const char *socket_path, const struct sbx_request *req,
			 const struct sbx_run_spec *spec, char *err, size_t errlen)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_bg_res r;
	char *strings = NULL;
	int fds[SBX_WIRE_MAX_FDS], nfds = 0, fd, rc;

	if (sbx_wire_encode_run(req, &h, &strings, fds, &nfds) != SBX_WIRE_OK) {
		free(strings);
		sbx_set_error(err, errlen, "invalid request: bad arguments or environment");
		return -EINVAL;
	}
	h.op = SBX_OP_RUN_START;
	if (!spec || sbx_wire_spec_to_run(spec, &w) != SBX_WIRE_OK ||
	    sbx_wire_check_run(&h, &w) != SBX_WIRE_OK) {
		free(strings);
		sbx_set_error(err, errlen, "invalid request: bad run spec");
		return -EINVAL;
	}
	fd = bg_send(socket_path, &h, &w, fds, nfds, strings);
	free(strings);
	if (fd < 0) {
		sbx_set_error(err, errlen, "cannot reach the sandbox broker: %s", strerror(-fd));
		return fd;
	}
	rc = bg_recv(fd, SBX_OP_RUN_START, &r);
	close(fd);
	if (rc < 0) {
		sbx_set_error(err, errlen, "the sandbox broker did not answer");
		return rc;
	}
	if (r.rc < 0)
		sbx_set_error(err, errlen, "%s", r.message);
	return r.rc;
}

int sbx_client_run_status(const char *socket_path, const char *id, const char *owner,
			  struct sbx_run_info *info, struct sbx_result *res)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_bg_res r;
	int fd, rc;

	memset(info, 0, sizeof *info);
	if (res)
		memset(res, 0, sizeof *res);
	rc = bg_simple(socket_path, SBX_OP_RUN_STATUS, id, owner, &w, &h);
	if (rc < 0)
		return rc;
	fd = bg_send(socket_path, &h, &w, NULL, 0, NULL);
	if (fd < 0)
		return fd;
	rc = bg_recv(fd, SBX_OP_RUN_STATUS, &r);
	if (rc == 0 && r.rc == 0) {
		struct sbx_result tmp;

		*info = r.info;
		info->id[sizeof info->id - 1] = info->owner[sizeof info->owner - 1] =
		    info->session[sizeof info->session - 1] = '\0';
		memset(&tmp, 0, sizeof tmp);
		if (r.has_result) {
			tmp.out = malloc((size_t)r.result.out_len + 1);
			tmp.err = malloc((size_t)r.result.err_len + 1);
			if (!tmp.out || !tmp.err ||
			    sbx_read_all(fd, tmp.out, (size_t)r.result.out_len) < 0 ||
			    sbx_read_all(fd, tmp.err, (size_t)r.result.err_len) < 0) {
				sbx_result_free(&tmp);
				close(fd);
				return -EPROTO;
			}
			tmp.out[r.result.out_len] = tmp.err[r.result.err_len] = '\0';
			tmp.out_len = (size_t)r.result.out_len;
			tmp.err_len = (size_t)r.result.err_len;
			(void)sbx_wire_decode_result(&r.result, &tmp);
		}
		if (res && r.has_result)
			*res = tmp;
		else
			sbx_result_free(&tmp);
	}
	close(fd);
	return rc < 0 ? rc : r.rc;
}

int sbx_client_run_output(const char *socket_path, const char *id, const char *owner, int stream,
			  uint64_t cursor, uint32_t wait_ms, struct sbx_run_chunk *out)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_bg_res r;
	struct timeval tv;
	int fd, rc;

	memset(out, 0, sizeof *out);
	if (stream != 1 && stream != 2)
		return -EINVAL;
	rc = bg_simple(socket_path, SBX_OP_RUN_OUTPUT, id, owner, &w, &h);
	if (rc < 0)
		return rc;
	w.stream = (uint32_t)stream;
	w.cursor = cursor;
	w.wait_ms = wait_ms > SBX_RUN_MAX_WAIT_MS ? SBX_RUN_MAX_WAIT_MS : wait_ms;
	fd = bg_send(socket_path, &h, &w, NULL, 0, NULL);
	if (fd < 0)
		return fd;
	/* a keeper that never answers must not hold the caller past its wait */
	tv.tv_sec = (time_t)(w.wait_ms / 1000 + 10);
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	rc = bg_recv(fd, SBX_OP_RUN_OUTPUT, &r);
	if (rc == 0 && r.rc == 0) {
		out->data = malloc((size_t)r.data_len + 1);
		if (!out->data || sbx_read_all(fd, out->data, (size_t)r.data_len) < 0 ||
		    r.next != cursor + r.data_len) {
			free(out->data);
			out->data = NULL;
			close(fd);
			return -EPROTO;
		}
		out->data[r.data_len] = '\0';
		out->len = (size_t)r.data_len;
		out->next = r.next;
		out->ended = r.ended;
		out->truncated = r.truncated;
	}
	close(fd);
	return rc < 0 ? rc : r.rc;
}

int sbx_client_run_list(const char *socket_path, const char *owner, const char *session,
			struct sbx_run_info **out, size_t *n)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_bg_res r;
	int fd, rc;
	size_t i;

	*out = NULL;
	*n = 0;
	rc = bg_simple(socket_path, SBX_OP_RUN_LIST, NULL, owner, &w, &h);
	if (rc < 0)
		return rc;
	if (session && strlen(session) >= sizeof w.session)
		return -EINVAL;
	if (session)
		memcpy(w.session, session, strlen(session));
	fd = bg_send(socket_path, &h, &w, NULL, 0, NULL);
	if (fd < 0)
		return fd;
	rc = bg_recv(fd, SBX_OP_RUN_LIST, &r);
	if (rc == 0 && r.rc == 0 && r.count) {
		*out = calloc((size_t)r.count, sizeof **out);
		if (!*out || sbx_read_all(fd, *out, (size_t)r.count * sizeof **out) < 0) {
			free(*out);
			*out = NULL;
			close(fd);
			return -EPROTO;
		}
		for (i = 0; i < r.count; i++) {
			struct sbx_run_info *x = &(*out)[i];

			x->id[sizeof x->id - 1] = x->owner[sizeof x->owner - 1] =
			    x->session[sizeof x->session - 1] = '\0';
		}
		*n = (size_t)r.count;
	}
	close(fd);
	return rc < 0 ? rc : r.rc;
}

int sbx_client_run_kill(const char *socket_path, const char *id, const char *owner)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_bg_res r;
	struct timeval tv = {30, 0};
	int fd, rc;

	rc = bg_simple(socket_path, SBX_OP_RUN_KILL, id, owner, &w, &h);
	if (rc < 0)
		return rc;
	fd = bg_send(socket_path, &h, &w, NULL, 0, NULL);
	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	rc = bg_recv(fd, SBX_OP_RUN_KILL, &r);
	close(fd);
	return rc < 0 ? rc : r.rc;
}
