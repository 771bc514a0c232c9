/* ctx_client.c: the unprivileged side of contexts (sandbox.h, section "contexts"; wire.h).
 *
 * Every request goes to the broker's control socket ("<socket>-health"), served by its main
 * process, which answers at once or hands the connection to the context's holder. A connection
 * that closes without an answer means the holder ended meanwhile (idle TTL, delete, stop): the
 * context is gone, -ENOENT. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "wire.h"

static int ctx_connect(const char *socket_path)
{
	struct sockaddr_un sa;
	int fd, flags;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (snprintf(sa.sun_path, sizeof sa.sun_path, "%s-health", socket_path) >=
	    (int)sizeof sa.sun_path)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Non-blocking: a full queue is EAGAIN at once, never an unbounded wait. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

static int set_id(struct sbx_wire_ctx *c, const char *id)
{
	size_t n = id ? strnlen(id, SBX_CTX_ID_LEN + 1) : 0;

	if (n != SBX_CTX_ID_LEN)
		return -EINVAL;
	memcpy(c->id, id, n);
	return 0;
}

/* Send one request and read the reply header. 0 (r filled, its rc is the answer) or -errno. */
static int exchange(int fd, const struct sbx_wire_req *h, const struct sbx_wire_ctx *c,
		    const int *fds, int nfds, const char *request, struct sbx_wire_ctx_res *r)
{
	enum sbx_wire_err e;

	/* A refusal may come (and the connection close) before the whole request is written: read
	 * it anyway. */
	bool sent = sbx_wire_send_ctx_req(fd, h, c, fds, nfds, request) == SBX_WIRE_OK;

	e = sbx_wire_recv_ctx_res(fd, h->op, r);
	if (!sent && e != SBX_WIRE_OK)
		return -EPIPE;
	if (e == SBX_WIRE_IO)
		return -ENOENT; /* closed without an answer: the holder ended */
	if (e != SBX_WIRE_OK)
		return -EPROTO;
	return 0;
}

/* A request with no payload either way: interrupt, restart, delete. */
static int simple(const char *socket_path, uint32_t op, const char *id)
{
	struct sbx_wire_req h;
	struct sbx_wire_ctx c;
	struct sbx_wire_ctx_res r;
	int fd, rc;

	sbx_wire_encode_ctx(op, &h, &c);
	if (set_id(&c, id) < 0)
		return -EINVAL;
	fd = ctx_connect(socket_path);
	if (fd < 0)
		return fd;
	rc = exchange(fd, &h, &c, NULL, 0, NULL, &r);
	close(fd);
	return rc < 0 ? rc : r.rc;
}

int sbx_client_ctx_create(const char *socket_path, const struct sbx_ctx_spec *spec, char *err,
			  size_t errlen)
{
	struct sbx_wire_req h;
	struct sbx_wire_ctx c;
	struct sbx_wire_ctx_res r;
	size_t olen = strnlen(spec->owner, sizeof spec->owner);
	int fd, rc;

	sbx_wire_encode_ctx(SBX_OP_CTX_CREATE, &h, &c);
	if (set_id(&c, spec->id) < 0 || olen == 0 || olen >= sizeof c.owner ||
	    spec->workdir_fd < 0 ||
	    (spec->language != SBX_CTX_PYTHON && spec->language != SBX_CTX_BASH)) {
		sbx_set_error(err, errlen, "invalid context spec");
		return -EINVAL;
	}
	memcpy(c.owner, spec->owner, olen);
	c.language = (uint32_t)spec->language;
	c.idle_ttl_s = spec->idle_ttl_s;
	c.max_per_owner = spec->max_per_owner;
	h.limits = spec->limits;
	if (sbx_wire_check_ctx(&h, &c) != SBX_WIRE_OK) {
		sbx_set_error(err, errlen, "invalid context spec");
		return -EINVAL;
	}
	fd = ctx_connect(socket_path);
	if (fd < 0) {
		sbx_set_error(err, errlen, "cannot reach the sandbox broker: %s", strerror(-fd));
		return fd;
	}
	rc = exchange(fd, &h, &c, &spec->workdir_fd, 1, NULL, &r);
	close(fd);
	if (rc < 0) {
		sbx_set_error(err, errlen, "the sandbox broker did not answer");
		return rc == -ENOENT ? -EPROTO : rc;
	}
	if (r.rc < 0)
		sbx_set_error(err, errlen, "%s", r.message);
	return r.rc;
}

static int recv_part(int fd, uint64_t len, char **out)
{
	*out = malloc((size_t)len + 1);
	if (!*out)
		return -ENOMEM;
	if (len && sbx_read_all(fd, *out, (size_t)len) < 0)
		return -EPROTO;
	(*out)[len] = '\0';
	return 0;
}

/* Frames of a streamed call until its END (or the reply itself: a refusal comes without
 * frames). 0 when the reply follows; -ECANCELED when on_output or cancel_fd said stop; -EPROTO.
 * delivered[] counts the output bytes handed over. */
static int recv_frames(int fd, int cancel_fd, sbx_output_fn on_output, void *arg,
		       uint64_t delivered[2], struct sbx_cell_result *res)
{
	uint64_t last = sbx_now_ms();
	char *buf = NULL;
	size_t cap = 0;
	int rc = 0;

	for (;;) {
		struct pollfd pf[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
		struct sbx_wire_frame f;
		uint64_t now = sbx_now_ms();
		int tmo = (int)(last + SBX_RUN_TICK_MS > now ? last + SBX_RUN_TICK_MS - now : 0), n;
		uint32_t magic = 0;

		n = poll(pf, cancel_fd >= 0 ? 2 : 1, tmo);
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (n > 0 && cancel_fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP))) {
			rc = -ECANCELED;
			break;
		}
		if (n <= 0 || !(pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (sbx_now_ms() >= last + SBX_RUN_TICK_MS) {
				last = sbx_now_ms();
				if (on_output(arg, 0, NULL, 0)) {
					rc = -ECANCELED;
					break;
				}
			}
			continue;
		}
		/* The usual reply (a refusal, or after END) or a frame: the magic tells. */
		if (recv(fd, &magic, sizeof magic, MSG_PEEK | MSG_WAITALL) !=
			(ssize_t)sizeof magic ||
		    magic == SBX_WIRE_MAGIC)
			break; /* the reply (or EOF: its reader says so) */
		if (sbx_read_all(fd, &f, sizeof f) < 0 || f.magic != SBX_WIRE_CTX_FRAME_MAGIC) {
			rc = -EPROTO;
			break;
		}
		if (f.stream == SBX_WIRE_FRAME_END && f.len == 0)
			break;
		if (!((f.stream == 1 || f.stream == 2) && f.len > 0 &&
		      f.len <= SBX_WIRE_MAX_FRAME) &&
		    !(f.stream == SBX_WIRE_CTX_FRAME_RESULT && f.len > 0 &&
		      f.len <= SBX_WIRE_CTX_MAX_RESULT)) {
			rc = -EPROTO;
			break;
		}
		if (f.len > cap) {
			char *p = realloc(buf, (size_t)f.len);

			if (!p) {
				rc = -ENOMEM;
				break;
			}
			buf = p;
			cap = (size_t)f.len;
		}
		if (sbx_read_all(fd, buf, (size_t)f.len) < 0) {
			rc = -EPROTO;
			break;
		}
		if (f.stream != SBX_WIRE_CTX_FRAME_RESULT)
			delivered[f.stream - 1] += f.len;
		last = sbx_now_ms();
		if (on_output(arg, (int)f.stream, buf, (size_t)f.len)) {
			rc = -ECANCELED;
			break;
		}
	}
	free(buf);
	if (rc == -ECANCELED)
		snprintf(res->message, sizeof res->message, "the caller went away");
	else if (rc < 0)
		snprintf(res->message, sizeof res->message,
			 "the sandbox broker sent a malformed stream");
	return rc;
}

/* The rest of out (from `from`), in pieces as frames would carry it. Nonzero when stopped. */
static int deliver_rest(sbx_output_fn on_output, void *arg, int stream, const char *all, size_t len,
			uint64_t from)
{
	while (from < len) {
		size_t k =
		    len - from > SBX_WIRE_MAX_FRAME ? SBX_WIRE_MAX_FRAME : len - (size_t)from;

		if (on_output(arg, stream, all + from, k))
			return -1;
		from += k;
	}
	return 0;
}

int sbx_client_ctx_call(const char *socket_path, const char *id, const struct sbx_cell *cell,
			int cancel_fd, struct sbx_cell_result *res)
{
	return sbx_client_ctx_call_stream(socket_path, id, cell, cancel_fd, NULL, NULL, res);
}

int sbx_client_ctx_call_stream(const char *socket_path, const char *id, const struct sbx_cell *cell,
			       int cancel_fd, sbx_output_fn on_output, void *arg,
			       struct sbx_cell_result *res)
{
	struct sbx_wire_req h;
	struct sbx_wire_ctx c;
	struct sbx_wire_ctx_res r;
	uint64_t delivered[2] = {0, 0};
	int fd = -1, rc;
	enum sbx_wire_err e;

	memset(res, 0, sizeof *res);
	res->status = SBX_INTERNAL_ERROR;
	sbx_wire_encode_ctx(SBX_OP_CTX_CALL, &h, &c);
	if (set_id(&c, id) < 0 || !cell->request || cell->request_len == 0 ||
	    cell->request_len > SBX_CTX_MAX_REQUEST) {
		snprintf(res->message, sizeof res->message, "invalid request");
		return -EINVAL;
	}
	c.request_len = (uint32_t)cell->request_len;
	c.wait_ms = cell->wait_ms;
	c.flags = on_output ? SBX_WIRE_CTX_STREAM : 0;
	h.limits = cell->limits;
	fd = ctx_connect(socket_path);
	if (fd < 0) {
		snprintf(res->message, sizeof res->message, "cannot reach the sandbox broker: %s",
			 strerror(-fd));
		return fd;
	}
	if (sbx_wire_send_ctx_req(fd, &h, &c, NULL, 0, cell->request) != SBX_WIRE_OK) {
		/* refused before the request was read (no such context...): the answer is there */
		struct pollfd pf = {fd, POLLIN, 0};

		if (poll(&pf, 1, 0) != 1) {
			rc = -EPIPE;
			snprintf(res->message, sizeof res->message,
				 "sending to the sandbox broker failed");
			goto out;
		}
	}
	/* Wait for the answer, or for the caller to give up: closing our connection then makes
	 * the holder interrupt the cell. */
	if (on_output && (rc = recv_frames(fd, cancel_fd, on_output, arg, delivered, res)) < 0)
		goto out;
	for (;;) {
		struct pollfd pf[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
		int n = poll(pf, cancel_fd >= 0 ? 2 : 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (pf[0].revents)
			break;
		if (cancel_fd >= 0 && pf[1].revents) {
			rc = -ECANCELED;
			snprintf(res->message, sizeof res->message, "the caller went away");
			goto out;
		}
	}
	e = sbx_wire_recv_ctx_res(fd, SBX_OP_CTX_CALL, &r);
	if (e != SBX_WIRE_OK) {
		rc = e == SBX_WIRE_IO ? -ENOENT : -EPROTO;
		snprintf(res->message, sizeof res->message, "%s",
			 rc == -ENOENT ? "no such context"
				       : "the sandbox broker sent a malformed answer");
		goto out;
	}
	snprintf(res->message, sizeof res->message, "%s", r.message);
	if (r.rc < 0) {
		rc = r.rc;
		goto out;
	}
	if ((rc = recv_part(fd, r.out_len, &res->out)) < 0 ||
	    (rc = recv_part(fd, r.err_len, &res->err)) < 0 ||
	    (r.has_reply && (rc = recv_part(fd, r.reply_len, &res->reply)) < 0)) {
		snprintf(res->message, sizeof res->message,
			 "the sandbox broker closed the connection");
		free(res->out);
		free(res->err);
		free(res->reply);
		res->out = res->err = res->reply = NULL;
		goto out;
	}
	res->status = (enum sbx_status)r.status;
	res->limit = (enum sbx_limit_kind)r.limit;
	res->lost = r.lost != 0;
	res->out_len = (size_t)r.out_len;
	res->err_len = (size_t)r.err_len;
	res->reply_len = r.has_reply ? (size_t)r.reply_len : 0;
	res->out_truncated = r.out_truncated != 0;
	res->err_truncated = r.err_truncated != 0;
	res->wall_ms = r.wall_ms;
	res->cpu_ms = r.cpu_ms;
	res->memory_kb = r.memory_kb;
	rc = 0;
	/* What was delivered is a prefix of the result by construction; a holder that says
	 * otherwise is not believed. Then the rest, so that the pieces add up to the result. */
	if (on_output && (delivered[0] > res->out_len || delivered[1] > res->err_len)) {
		rc = -EPROTO;
		snprintf(res->message, sizeof res->message,
			 "the sandbox broker sent more output than its result");
	} else if (on_output &&
		   (deliver_rest(on_output, arg, 1, res->out, res->out_len, delivered[0]) ||
		    deliver_rest(on_output, arg, 2, res->err, res->err_len, delivered[1]))) {
		rc = -ECANCELED;
		snprintf(res->message, sizeof res->message, "the caller went away");
	}
out:
	if (rc < 0) {
		res->status = SBX_INTERNAL_ERROR;
		if (res->out && rc != -ENOENT && rc != -EBUSY) {
			free(res->out);
			free(res->err);
			free(res->reply);
			res->out = res->err = res->reply = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int sbx_client_ctx_interrupt(const char *socket_path, const char *id)
{
	return simple(socket_path, SBX_OP_CTX_INTERRUPT, id);
}

int sbx_client_ctx_restart(const char *socket_path, const char *id)
{
	return simple(socket_path, SBX_OP_CTX_RESTART, id);
}

int sbx_client_ctx_delete(const char *socket_path, const char *id)
{
	return simple(socket_path, SBX_OP_CTX_DELETE, id);
}

int sbx_client_ctx_list(const char *socket_path, const char *owner, struct sbx_ctx_info **out,
			size_t *n)
{
	struct sbx_wire_req h;
	struct sbx_wire_ctx c;
	struct sbx_wire_ctx_res r;
	struct sbx_ctx_info *info = NULL;
	size_t olen = owner ? strnlen(owner, sizeof c.owner) : 0, i;
	int fd, rc;

	*out = NULL;
	*n = 0;
	sbx_wire_encode_ctx(SBX_OP_CTX_LIST, &h, &c);
	if (olen >= sizeof c.owner)
		return -EINVAL;
	if (olen)
		memcpy(c.owner, owner, olen);
	fd = ctx_connect(socket_path);
	if (fd < 0)
		return fd;
	rc = exchange(fd, &h, &c, NULL, 0, NULL, &r);
	if (rc == 0)
		rc = r.rc;
	if (rc == 0 && r.count) {
		info = calloc((size_t)r.count, sizeof *info);
		if (!info)
			rc = -ENOMEM;
		else if (sbx_read_all(fd, info, (size_t)r.count * sizeof *info) < 0)
			rc = -EPROTO;
		for (i = 0; rc == 0 && i < r.count; i++)
			if (sbx_wire_check_ctx_info(&info[i]) != SBX_WIRE_OK)
				rc = -EPROTO;
	}
	close(fd);
	if (rc < 0) {
		free(info);
		return rc;
	}
	*out = info;
	*n = (size_t)r.count;
	return 0;
}

void sbx_cell_result_free(struct sbx_cell_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	free(res->reply);
	memset(res, 0, sizeof *res);
}

const char *sbx_ctx_lang_name(enum sbx_ctx_lang lang)
{
	return lang == SBX_CTX_PYTHON ? "python" : lang == SBX_CTX_BASH ? "bash" : NULL;
}
