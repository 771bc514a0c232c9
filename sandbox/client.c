/* client.c: sbx_client_run() and sbx_client_probe(): the unprivileged side of the broker
 * protocol (wire.h). Used by the FastCGI workers, which never hold the sandbox's privileges. */
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

static int set_internal(struct sbx_result *res, int rc, const char *what, int err)
{
	res->status = SBX_INTERNAL_ERROR;
	snprintf(res->message, sizeof res->message, "%s%s%s", what, err ? ": " : "",
	         err ? strerror(err) : "");
	return rc;
}

/* Connect without waiting in a full queue: a saturated broker is EAGAIN, so the caller can
 * answer 503 at once instead of queueing without bound. */
static int connect_broker(const char *path)
{
	struct sockaddr_un sa;
	int fd, flags;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

int sbx_client_run(const char *socket_path, const struct sbx_request *req,
                   struct sbx_result *res)
{
	struct sbx_wire_req h;
	struct sbx_wire_res r;
	char *strings = NULL;
	size_t off = 0, i;
	int fd = -1, fds[2], nfds = 0, rc = -1;

	memset(res, 0, sizeof *res);
	memset(&h, 0, sizeof h);
	h.magic = SBX_WIRE_MAGIC;
	h.op = SBX_OP_RUN;
	h.limits = req->limits;
	for (i = 0; req->argv && req->argv[i]; i++) {
		h.argc++;
		off += strlen(req->argv[i]) + 1;
	}
	for (i = 0; req->env && req->env[i]; i++) {
		h.envc++;
		off += strlen(req->env[i]) + 1;
	}
	if (h.argc == 0 || h.argc > SBX_MAX_ARGS || h.envc > SBX_MAX_ARGS ||
	    off > SBX_MAX_ARGS_BYTES) {
		rc = set_internal(res, -EINVAL, "invalid request: too many or too long arguments", 0);
		goto out;
	}
	h.strings_len = (uint32_t)off;
	strings = malloc(off ? off : 1);
	if (!strings) {
		rc = set_internal(res, -ENOMEM, "out of memory", 0);
		goto out;
	}
	off = 0;
	for (i = 0; req->argv[i]; i++) {
		size_t n = strlen(req->argv[i]) + 1;

		memcpy(strings + off, req->argv[i], n);
		off += n;
	}
	for (i = 0; req->env && req->env[i]; i++) {
		size_t n = strlen(req->env[i]) + 1;

		memcpy(strings + off, req->env[i], n);
		off += n;
	}
	if (req->workdir_fd >= 0) {
		h.has_workdir = 1;
		fds[nfds++] = req->workdir_fd;
	}
	if (req->stdin_fd >= 0) {
		h.has_stdin = 1;
		fds[nfds++] = req->stdin_fd;
	}
	fd = connect_broker(socket_path);
	if (fd < 0) {
		int e = errno;

		if (e == EAGAIN)
			rc = set_internal(res, -EAGAIN, "all sandbox slots are busy", 0);
		else
			rc = set_internal(res, -e, "cannot reach the sandbox broker", e);
		goto out;
	}
	if (sbx_send_fds(fd, &h, sizeof h, fds, nfds) < 0 || sbx_write_all(fd, strings, off) < 0) {
		rc = set_internal(res, -EPIPE, "sending to the sandbox broker failed", errno);
		goto out;
	}
	if (sbx_read_all(fd, &r, sizeof r) < 0 || r.magic != SBX_WIRE_MAGIC) {
		rc = set_internal(res, -EPROTO, "the sandbox broker closed the connection", 0);
		goto out;
	}
	if (r.out_len > SBX_DEFAULT_OUTPUT_HARD_BYTES * 64 ||
	    r.err_len > SBX_DEFAULT_OUTPUT_HARD_BYTES * 64) {
		rc = set_internal(res, -EPROTO, "the sandbox broker sent an oversized answer", 0);
		goto out;
	}
	res->out = malloc(r.out_len + 1);
	res->err = malloc(r.err_len + 1);
	if (!res->out || !res->err) {
		rc = set_internal(res, -ENOMEM, "out of memory", 0);
		goto out;
	}
	if (sbx_read_all(fd, res->out, r.out_len) < 0 || sbx_read_all(fd, res->err, r.err_len) < 0) {
		rc = set_internal(res, -EPROTO, "the sandbox broker closed the connection", 0);
		goto out;
	}
	res->out[r.out_len] = '\0';
	res->err[r.err_len] = '\0';
	res->out_len = r.out_len;
	res->err_len = r.err_len;
	res->status = (enum sbx_status)r.status;
	res->limit = (enum sbx_limit_kind)r.limit;
	res->exit_code = r.exit_code;
	res->signal = r.signal;
	res->out_truncated = r.out_truncated;
	res->err_truncated = r.err_truncated;
	res->wall_ms = r.wall_ms;
	res->cpu_ms = r.cpu_ms;
	res->memory_kb = r.memory_kb;
	r.message[sizeof r.message - 1] = '\0';
	snprintf(res->message, sizeof res->message, "%.255s", r.message);
	rc = r.rc;
out:
	if (!res->out)
		res->out = calloc(1, 1);
	if (!res->err)
		res->err = calloc(1, 1);
	free(strings);
	if (fd >= 0)
		close(fd);
	return rc;
}

int sbx_client_probe(const char *socket_path, struct sbx_probe *out)
{
	struct sbx_wire_req h;
	struct sbx_wire_res r;
	int fd;

	memset(out, 0, sizeof *out);
	memset(&h, 0, sizeof h);
	h.magic = SBX_WIRE_MAGIC;
	h.op = SBX_OP_PROBE;
	{
		char path[256];

		/* Probes have their own socket so they never queue behind long runs. */
		snprintf(path, sizeof path, "%s-health", socket_path);
		fd = connect_broker(path);
	}
	if (fd < 0) {
		snprintf(out->detail, sizeof out->detail, "cannot reach the sandbox broker: %s",
		         strerror(errno));
		return -1;
	}
	if (sbx_send_fds(fd, &h, sizeof h, NULL, 0) < 0 || sbx_read_all(fd, &r, sizeof r) < 0 ||
	    r.magic != SBX_WIRE_MAGIC) {
		snprintf(out->detail, sizeof out->detail, "the sandbox broker did not answer");
		close(fd);
		return -1;
	}
	close(fd);
	r.message[sizeof r.message - 1] = '\0';
	out->cgroup_version = r.cgroup_version;
	out->usable = r.usable != 0;
	snprintf(out->detail, sizeof out->detail, "%.511s", r.message);
	return out->usable ? 0 : -1;
}

int sbx_client_set_quota(const char *socket_path, int dirfd, uint64_t bytes, char *err,
                         size_t errlen)
{
	struct sbx_wire_req h;
	struct sbx_wire_res r;
	char path[256];
	int fd, rc = -EPROTO;

	memset(&h, 0, sizeof h);
	h.magic = SBX_WIRE_MAGIC;
	h.op = SBX_OP_QUOTA;
	h.has_workdir = 1;
	h.limits.file_size_bytes = bytes;
	snprintf(path, sizeof path, "%s-health", socket_path);
	fd = connect_broker(path);
	if (fd < 0) {
		rc = -errno;
		sbx_set_error(err, errlen, "cannot reach the sandbox broker: %s", strerror(errno));
		return rc;
	}
	if (sbx_send_fds(fd, &h, sizeof h, &dirfd, 1) < 0 || sbx_read_all(fd, &r, sizeof r) < 0 ||
	    r.magic != SBX_WIRE_MAGIC) {
		sbx_set_error(err, errlen, "the sandbox broker did not answer");
		goto out;
	}
	r.message[sizeof r.message - 1] = '\0';
	rc = r.rc;
	if (rc < 0)
		sbx_set_error(err, errlen, "%s", r.message);
out:
	close(fd);
	return rc;
}
