/* runs_client.c: the client side of runs (sandbox.h, section "runs"): streaming, stdin, signals,
 * background runs. Used by the FastCGI workers, which never hold the sandbox's privileges. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "wire.h"

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

int sbx_client_run_stream(const char *socket_path, const struct sbx_request *req,
			  const struct sbx_run_spec *spec, sbx_output_fn on_output, void *arg,
			  struct sbx_result *res)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	char *strings = NULL, *frame = NULL, *buf = NULL;
	int fd = -1, fds[SBX_WIRE_MAX_FDS], nfds = 0, rc = -1;
	size_t delivered[2] = {0, 0};
	uint64_t last = sbx_now_ms();
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
		if (sbx_read_all(fd, frame, (size_t)f.len) < 0) {
			rc = fail(res, -EPROTO, "the sandbox broker closed the connection", NULL);
			goto out;
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

int sbx_client_run_stdin(const char *socket_path, const char *id, const char *owner,
			 const void *data, size_t len, bool eof)
{
	return run_control(socket_path, SBX_OP_RUN_STDIN, id, owner, data, len, eof, 0);
}

int sbx_client_run_signal(const char *socket_path, const char *id, const char *owner, int sig)
{
	if (sig != SIGINT && sig != SIGTERM && sig != SIGKILL)
		return -EINVAL;
	return run_control(socket_path, SBX_OP_RUN_SIGNAL, id, owner, NULL, 0, false, sig);
}

/* ---- background runs: not yet ---- */

int sbx_client_run_start(const char *socket_path, const struct sbx_request *req,
			 const struct sbx_run_spec *spec, char *err, size_t errlen)
{
	(void)socket_path, (void)req, (void)spec;
	sbx_set_error(err, errlen, "background runs are not implemented yet");
	return -ENOSYS;
}

int sbx_client_run_status(const char *socket_path, const char *id, const char *owner,
			  struct sbx_run_info *info, struct sbx_result *res)
{
	(void)socket_path, (void)id, (void)owner, (void)res;
	memset(info, 0, sizeof *info);
	return -ENOSYS;
}

int sbx_client_run_output(const char *socket_path, const char *id, const char *owner, int stream,
			  uint64_t cursor, uint32_t wait_ms, struct sbx_run_chunk *out)
{
	(void)socket_path, (void)id, (void)owner, (void)stream, (void)cursor, (void)wait_ms;
	memset(out, 0, sizeof *out);
	return -ENOSYS;
}

int sbx_client_run_list(const char *socket_path, const char *owner, const char *session,
			struct sbx_run_info **out, size_t *n)
{
	(void)socket_path, (void)owner, (void)session;
	*out = NULL;
	*n = 0;
	return -ENOSYS;
}

int sbx_client_run_kill(const char *socket_path, const char *id, const char *owner)
{
	(void)socket_path, (void)id, (void)owner;
	return -ENOSYS;
}
