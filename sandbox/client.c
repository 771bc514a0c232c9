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
int sbx_client_connect(const char *path)
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

/* The message for a reply that was refused: the cases the old client named keep their words. */
static int reply_refused(struct sbx_result *res, enum sbx_wire_err e)
{
	char what[96];

	switch (e) {
	case SBX_WIRE_NOMEM:
		return set_internal(res, -ENOMEM, "out of memory", 0);
	case SBX_WIRE_IO:
	case SBX_WIRE_TRUNCATED:
	case SBX_WIRE_BAD_MAGIC:
		return set_internal(res, -EPROTO, "the sandbox broker closed the connection", 0);
	case SBX_WIRE_TOO_LONG:
		return set_internal(res, -EPROTO, "the sandbox broker sent an oversized answer", 0);
	default:
		snprintf(what, sizeof what, "the sandbox broker sent a malformed answer (%s)",
			 sbx_wire_strerror(e));
		return set_internal(res, -EPROTO, what, 0);
	}
}

int sbx_client_run(const char *socket_path, const struct sbx_request *req, struct sbx_result *res)
{
	struct sbx_wire_req h;
	char *strings = NULL;
	int fd = -1, fds[SBX_WIRE_MAX_FDS], nfds = 0, rc = -1;
	enum sbx_wire_err e;

	memset(res, 0, sizeof *res);
	e = sbx_wire_encode_run(req, &h, &strings, fds, &nfds);
	if (e == SBX_WIRE_NOMEM) {
		rc = set_internal(res, -ENOMEM, "out of memory", 0);
		goto out;
	}
	if (e != SBX_WIRE_OK) {
		rc = set_internal(res, -EINVAL,
				  e == SBX_WIRE_BAD_STRINGS
				      ? "invalid request: an environment entry is not KEY=VALUE"
				      : "invalid request: too many or too long arguments",
				  0);
		goto out;
	}
	fd = sbx_client_connect(socket_path);
	if (fd < 0) {
		int err = errno;

		if (err == EAGAIN)
			rc = set_internal(res, -EAGAIN, "all sandbox slots are busy", 0);
		else
			rc = set_internal(res, -err, "cannot reach the sandbox broker", err);
		goto out;
	}
	if (sbx_wire_send_req(fd, &h, fds, nfds, strings) != SBX_WIRE_OK) {
		rc = set_internal(res, -EPIPE, "sending to the sandbox broker failed", errno);
		goto out;
	}
	e = sbx_wire_recv_result(fd, res, &rc);
	if (e != SBX_WIRE_OK)
		rc = reply_refused(res, e);
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

/* Connect to the control socket, send h (with dirfd when >= 0) and read the checked reply. */
static int control_call(const char *socket_path, const struct sbx_wire_req *h, int dirfd,
			struct sbx_wire_res *r, char *err, size_t errlen)
{
	char path[256];
	int fd, rc;

	/* Probes and quotas have their own socket so they never queue behind long runs. */
	snprintf(path, sizeof path, "%s-health", socket_path);
	fd = sbx_client_connect(path);
	if (fd < 0) {
		rc = -errno;
		sbx_set_error(err, errlen, "cannot reach the sandbox broker: %s", strerror(errno));
		return rc;
	}
	rc = 0;
	if (sbx_wire_send_req(fd, h, &dirfd, dirfd >= 0 ? 1 : 0, NULL) != SBX_WIRE_OK ||
	    sbx_wire_recv_res(fd, h->op, r) != SBX_WIRE_OK) {
		sbx_set_error(err, errlen, "the sandbox broker did not answer");
		rc = -EPROTO;
	}
	close(fd);
	return rc;
}

int sbx_client_probe(const char *socket_path, struct sbx_probe *out)
{
	struct sbx_wire_req h;
	struct sbx_wire_res r;

	memset(out, 0, sizeof *out);
	sbx_wire_encode_probe(&h);
	if (control_call(socket_path, &h, -1, &r, out->detail, sizeof out->detail) < 0)
		return -1;
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
	int rc;

	sbx_wire_encode_quota(&h, bytes);
	rc = control_call(socket_path, &h, dirfd, &r, err, errlen);
	if (rc < 0)
		return rc;
	if (r.rc < 0)
		sbx_set_error(err, errlen, "%s", r.message);
	return r.rc;
}
