/* wire.c: the broker protocol (wire.h) packed, unpacked and bounds-checked in one place.
 *
 * The pure half (encode, check, decode) touches no descriptor, so the unit tests and the fuzz
 * driver exercise every refusal without a broker. The socket half only moves bytes and calls the
 * pure half before it trusts a single field: a length is checked before it sizes an allocation
 * or a read, a count before it indexes an array, an enum before it is cast. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "wire.h"

const char *sbx_wire_strerror(enum sbx_wire_err e)
{
	static const char *const names[] = {
	    [SBX_WIRE_OK] = "ok",
	    [SBX_WIRE_IO] = "io",
	    [SBX_WIRE_TRUNCATED] = "truncated",
	    [SBX_WIRE_BAD_MAGIC] = "bad_magic",
	    [SBX_WIRE_BAD_OP] = "bad_op",
	    [SBX_WIRE_BAD_COUNT] = "bad_count",
	    [SBX_WIRE_TOO_LONG] = "too_long",
	    [SBX_WIRE_BAD_FLAG] = "bad_flag",
	    [SBX_WIRE_BAD_FDS] = "bad_fds",
	    [SBX_WIRE_BAD_STRINGS] = "bad_strings",
	    [SBX_WIRE_BAD_ENUM] = "bad_enum",
	    [SBX_WIRE_BAD_RC] = "bad_rc",
	    [SBX_WIRE_NOMEM] = "nomem",
	};

	return (unsigned)e < sizeof names / sizeof *names ? names[e] : "unknown";
}

/* ---- requests ---- */

static void req_init(struct sbx_wire_req *h, uint32_t op)
{
	memset(h, 0, sizeof *h);
	h->magic = SBX_WIRE_MAGIC;
	h->op = op;
}

static bool env_entry_ok(const char *s)
{
	return s[0] != '=' && strchr(s, '=') != NULL;
}

enum sbx_wire_err sbx_wire_encode_run(const struct sbx_request *req, struct sbx_wire_req *h,
				      char **strings, int fds[SBX_WIRE_MAX_FDS], int *nfds)
{
	size_t len = 0, off = 0, i;
	char *buf;

	*strings = NULL;
	*nfds = 0;
	req_init(h, SBX_OP_RUN);
	h->limits = req->limits;
	for (i = 0; req->argv && req->argv[i] && i <= SBX_MAX_ARGS; i++)
		len += strlen(req->argv[i]) + 1;
	if (i == 0 || i > SBX_MAX_ARGS)
		return SBX_WIRE_BAD_COUNT;
	h->argc = (uint32_t)i;
	for (i = 0; req->env && req->env[i] && i <= SBX_MAX_ARGS; i++) {
		if (!env_entry_ok(req->env[i]))
			return SBX_WIRE_BAD_STRINGS;
		len += strlen(req->env[i]) + 1;
	}
	if (i > SBX_MAX_ARGS)
		return SBX_WIRE_BAD_COUNT;
	h->envc = (uint32_t)i;
	if (len > SBX_MAX_ARGS_BYTES)
		return SBX_WIRE_TOO_LONG;
	buf = malloc(len ? len : 1);
	if (!buf)
		return SBX_WIRE_NOMEM;
	for (i = 0; i < h->argc; i++) {
		size_t n = strlen(req->argv[i]) + 1;

		memcpy(buf + off, req->argv[i], n);
		off += n;
	}
	for (i = 0; i < h->envc; i++) {
		size_t n = strlen(req->env[i]) + 1;

		memcpy(buf + off, req->env[i], n);
		off += n;
	}
	h->strings_len = (uint32_t)off;
	if (req->workdir_fd >= 0) {
		h->has_workdir = 1;
		fds[(*nfds)++] = req->workdir_fd;
	}
	if (req->layer_fd > 0) {
		h->has_layer = 1;
		fds[(*nfds)++] = req->layer_fd;
	}
	if (req->stdin_fd >= 0) {
		h->has_stdin = 1;
		fds[(*nfds)++] = req->stdin_fd;
	}
	*strings = buf;
	return SBX_WIRE_OK;
}

void sbx_wire_encode_probe(struct sbx_wire_req *h)
{
	req_init(h, SBX_OP_PROBE);
}

void sbx_wire_encode_quota(struct sbx_wire_req *h, uint64_t bytes)
{
	req_init(h, SBX_OP_QUOTA);
	h->has_workdir = 1;
	h->limits.file_size_bytes = bytes;
}

enum sbx_wire_err sbx_wire_check_req(const struct sbx_wire_req *h, int nfds)
{
	if (h->magic != SBX_WIRE_MAGIC)
		return SBX_WIRE_BAD_MAGIC;
	if (h->op != SBX_OP_RUN && h->op != SBX_OP_PROBE && h->op != SBX_OP_QUOTA &&
	    !sbx_wire_is_ctx_op(h->op) && h->op != SBX_OP_RUN_STREAM && h->op != SBX_OP_RUN_STDIN &&
	    h->op != SBX_OP_RUN_SIGNAL && !sbx_wire_is_bg_op(h->op))
		return SBX_WIRE_BAD_OP;
	if (h->has_workdir > 1 || h->has_stdin > 1 || h->has_layer > 1 || h->reserved != 0 ||
	    h->reserved2 != 0)
		return SBX_WIRE_BAD_FLAG;
	if (nfds < 0 || nfds > SBX_WIRE_MAX_FDS ||
	    (uint32_t)nfds != h->has_workdir + h->has_layer + h->has_stdin)
		return SBX_WIRE_BAD_FDS;
	/* A layer goes only with what runs a program. */
	if (h->has_layer && !sbx_wire_carries_strings(h->op))
		return SBX_WIRE_BAD_FDS;
	if (sbx_wire_carries_strings(h->op)) {
		if (h->argc == 0 || h->argc > SBX_MAX_ARGS || h->envc > SBX_MAX_ARGS)
			return SBX_WIRE_BAD_COUNT;
		if (h->strings_len > SBX_MAX_ARGS_BYTES)
			return SBX_WIRE_TOO_LONG;
		/* every string has at least its NUL */
		if (h->strings_len < h->argc + h->envc)
			return SBX_WIRE_TRUNCATED;
		return SBX_WIRE_OK;
	}
	/* PROBE, QUOTA and the context ops carry no strings; QUOTA and CTX_CREATE exactly the
	 * directory, the others nothing. */
	if (h->argc != 0 || h->envc != 0)
		return SBX_WIRE_BAD_COUNT;
	if (h->strings_len != 0)
		return SBX_WIRE_TOO_LONG;
	if (sbx_wire_is_ctx_op(h->op))
		return h->op == SBX_OP_CTX_CREATE
			   ? (!h->has_workdir || h->has_stdin) ? SBX_WIRE_BAD_FDS : SBX_WIRE_OK
		       : h->has_workdir || h->has_stdin ? SBX_WIRE_BAD_FDS
							: SBX_WIRE_OK;
	if (h->op == SBX_OP_RUN_STDIN || h->op == SBX_OP_RUN_SIGNAL || sbx_wire_is_bg_op(h->op))
		return h->has_workdir || h->has_stdin ? SBX_WIRE_BAD_FDS : SBX_WIRE_OK;
	if (h->op == SBX_OP_QUOTA ? !h->has_workdir || h->has_stdin
				  : h->has_workdir || h->has_stdin)
		return SBX_WIRE_BAD_FDS;
	return SBX_WIRE_OK;
}

void sbx_wire_req_fds(const struct sbx_wire_req *h, const int *fds, int nfds,
		      struct sbx_request *req)
{
	int k = 0;

	req->workdir_fd = h->has_workdir && k < nfds ? fds[k++] : -1;
	req->layer_fd = h->has_layer && k < nfds ? fds[k++] : -1;
	req->stdin_fd = h->has_stdin && k < nfds ? fds[k++] : -1;
}

enum sbx_wire_err sbx_wire_decode_strings(const struct sbx_wire_req *h, char *s, size_t len,
					  const char **argv, const char **envp)
{
	size_t off = 0;
	uint32_t i;

	if (!sbx_wire_carries_strings(h->op) || h->argc == 0 || h->argc > SBX_MAX_ARGS ||
	    h->envc > SBX_MAX_ARGS)
		return SBX_WIRE_BAD_COUNT;
	if (len != h->strings_len)
		return SBX_WIRE_TRUNCATED;
	for (i = 0; i < h->argc + h->envc; i++) {
		char *end;

		if (off >= len || !(end = memchr(s + off, '\0', len - off)))
			return SBX_WIRE_BAD_STRINGS;
		if (i < h->argc)
			argv[i] = s + off;
		else if (!env_entry_ok(s + off))
			return SBX_WIRE_BAD_STRINGS;
		else
			envp[i - h->argc] = s + off;
		off = (size_t)(end - s) + 1;
	}
	if (off != len)
		return SBX_WIRE_BAD_STRINGS; /* bytes past the last counted string */
	argv[h->argc] = NULL;
	envp[h->envc] = NULL;
	return SBX_WIRE_OK;
}

/* ---- replies ---- */

void sbx_wire_res_init(struct sbx_wire_res *r)
{
	memset(r, 0, sizeof *r);
	r->magic = SBX_WIRE_MAGIC;
}

void sbx_wire_encode_result(struct sbx_wire_res *r, int rc, const struct sbx_result *res)
{
	size_t n = strnlen(res->message, sizeof res->message);

	sbx_wire_res_init(r);
	r->rc = rc;
	r->status = (int32_t)res->status;
	r->limit = (int32_t)res->limit;
	r->exit_code = res->exit_code;
	r->signal = res->signal;
	r->out_truncated = res->out_truncated;
	r->err_truncated = res->err_truncated;
	r->out_len = res->out_len;
	r->err_len = res->err_len;
	r->wall_ms = res->wall_ms;
	r->cpu_ms = res->cpu_ms;
	r->memory_kb = res->memory_kb;
	memcpy(r->message, res->message, n); /* the rest stays zero: always terminated */
}

enum sbx_wire_err sbx_wire_check_res(const struct sbx_wire_res *r, uint32_t op)
{
	if (r->magic != SBX_WIRE_MAGIC)
		return SBX_WIRE_BAD_MAGIC;
	if (!memchr(r->message, '\0', sizeof r->message))
		return SBX_WIRE_BAD_STRINGS;
	if (r->rc > 0)
		return SBX_WIRE_BAD_RC;
	switch (op) {
	case SBX_OP_RUN:
		if (r->status < SBX_OK || r->status > SBX_INTERNAL_ERROR ||
		    r->limit < SBX_LIMIT_NONE || r->limit > SBX_LIMIT_CPU)
			return SBX_WIRE_BAD_ENUM;
		/* sbx_run's contract: negative exactly when the sandbox failed */
		if ((r->rc < 0) != (r->status == SBX_INTERNAL_ERROR))
			return SBX_WIRE_BAD_RC;
		if (r->out_truncated > 1 || r->err_truncated > 1)
			return SBX_WIRE_BAD_FLAG;
		if (r->out_len > SBX_WIRE_MAX_OUTPUT_BYTES ||
		    r->err_len > SBX_WIRE_MAX_OUTPUT_BYTES)
			return SBX_WIRE_TOO_LONG;
		return SBX_WIRE_OK;
	case SBX_OP_PROBE:
		if (r->cgroup_version < 0 || r->cgroup_version > 2)
			return SBX_WIRE_BAD_ENUM;
		if (r->usable != 0 && r->usable != 1)
			return SBX_WIRE_BAD_FLAG;
		return r->out_len || r->err_len ? SBX_WIRE_TOO_LONG
						: SBX_WIRE_OK; /* nothing follows */
	case SBX_OP_QUOTA:
	case SBX_OP_RUN_STDIN:
	case SBX_OP_RUN_SIGNAL:
		return r->out_len || r->err_len ? SBX_WIRE_TOO_LONG : SBX_WIRE_OK;
	default:
		return SBX_WIRE_BAD_OP;
	}
}

int sbx_wire_decode_result(const struct sbx_wire_res *r, struct sbx_result *res)
{
	res->status = (enum sbx_status)r->status;
	res->limit = (enum sbx_limit_kind)r->limit;
	res->exit_code = r->exit_code;
	res->signal = r->signal;
	res->out_truncated = r->out_truncated != 0;
	res->err_truncated = r->err_truncated != 0;
	res->wall_ms = r->wall_ms;
	res->cpu_ms = r->cpu_ms;
	res->memory_kb = r->memory_kb;
	/* the result's message is shorter than the wire's: cut, always terminated */
	memset(res->message, 0, sizeof res->message);
	memcpy(res->message, r->message, strnlen(r->message, sizeof res->message - 1));
	return r->rc;
}

/* ---- on a socket ---- */

enum sbx_wire_err sbx_wire_send_req(int sock, const struct sbx_wire_req *h, const int *fds,
				    int nfds, const char *strings)
{
	if (sbx_send_fds(sock, h, sizeof *h, fds, nfds) < 0)
		return SBX_WIRE_IO;
	if (h->strings_len && sbx_write_all(sock, strings, h->strings_len) < 0)
		return SBX_WIRE_IO;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_recv_req(int sock, struct sbx_wire_req *h, int fds[SBX_WIRE_MAX_FDS],
				    int *nfds)
{
	/* room for more than we accept, so that a peer sending too many is seen, not truncated */
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {h, sizeof *h};
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t n;
	int extra = 0;

	memset(h, 0, sizeof *h);
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	*nfds = 0;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return SBX_WIRE_IO;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k, i;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
			/* Never 0-2 (a daemon with them closed gets those numbers): a layer on 0
			 * would read as "no layer" (sbx_request.layer_fd). */
			if (f >= 0 && f <= 2) {
				int hi = fcntl(f, F_DUPFD_CLOEXEC, 3);

				close(f);
				f = hi;
			}
			if (f < 0) {
				extra++;
			} else if (*nfds < SBX_WIRE_MAX_FDS) {
				fds[(*nfds)++] = f;
			} else {
				close(f);
				extra++;
			}
		}
	}
	if (n != (ssize_t)sizeof *h)
		return n == 0 ? SBX_WIRE_IO : SBX_WIRE_TRUNCATED;
	if ((msg.msg_flags & MSG_CTRUNC) || extra)
		return SBX_WIRE_BAD_FDS;
	return sbx_wire_check_req(h, *nfds);
}

enum sbx_wire_err sbx_wire_recv_strings(int sock, const struct sbx_wire_req *h, char **strings,
					const char **argv, const char **envp)
{
	enum sbx_wire_err e =
	    sbx_wire_check_req(h, (int)(h->has_workdir + h->has_layer + h->has_stdin));

	*strings = NULL;
	if (e != SBX_WIRE_OK)
		return e;
	if (!sbx_wire_carries_strings(h->op))
		return SBX_WIRE_BAD_OP;
	*strings = malloc((size_t)h->strings_len + 1);
	if (!*strings)
		return SBX_WIRE_NOMEM;
	if (sbx_read_all(sock, *strings, h->strings_len) < 0)
		return SBX_WIRE_TRUNCATED;
	return sbx_wire_decode_strings(h, *strings, h->strings_len, argv, envp);
}

enum sbx_wire_err sbx_wire_send_res(int sock, const struct sbx_wire_res *r, const char *out,
				    const char *err)
{
	if (sbx_write_all(sock, r, sizeof *r) < 0 ||
	    (r->out_len && sbx_write_all(sock, out, (size_t)r->out_len) < 0) ||
	    (r->err_len && sbx_write_all(sock, err, (size_t)r->err_len) < 0))
		return SBX_WIRE_IO;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_recv_res(int sock, uint32_t op, struct sbx_wire_res *r)
{
	if (sbx_read_all(sock, r, sizeof *r) < 0)
		return SBX_WIRE_IO;
	return sbx_wire_check_res(r, op);
}

static enum sbx_wire_err recv_stream(int sock, uint64_t len, char **buf)
{
	*buf = malloc((size_t)len + 1);
	if (!*buf)
		return SBX_WIRE_NOMEM;
	if (sbx_read_all(sock, *buf, (size_t)len) < 0)
		return SBX_WIRE_TRUNCATED;
	(*buf)[len] = '\0';
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_recv_result(int sock, struct sbx_result *res, int *rc)
{
	struct sbx_wire_res r;
	enum sbx_wire_err e = sbx_wire_recv_res(sock, SBX_OP_RUN, &r);

	if (e == SBX_WIRE_OK)
		e = recv_stream(sock, r.out_len, &res->out);
	if (e == SBX_WIRE_OK)
		e = recv_stream(sock, r.err_len, &res->err);
	if (e != SBX_WIRE_OK) {
		free(res->out);
		free(res->err);
		res->out = res->err = NULL;
		return e;
	}
	res->out_len = (size_t)r.out_len;
	res->err_len = (size_t)r.err_len;
	*rc = sbx_wire_decode_result(&r, res);
	return SBX_WIRE_OK;
}

/* ---- runs ---- */

bool sbx_wire_carries_strings(uint32_t op)
{
	return op == SBX_OP_RUN || op == SBX_OP_RUN_STREAM || op == SBX_OP_RUN_START;
}

bool sbx_wire_is_bg_op(uint32_t op)
{
	return op >= SBX_OP_RUN_START && op <= SBX_OP_RUN_KILL;
}

enum sbx_wire_err sbx_wire_check_bg_res(const struct sbx_wire_bg_res *r, uint32_t op)
{
	const struct sbx_run_info *i = &r->info;

	if (r->magic != SBX_WIRE_MAGIC)
		return SBX_WIRE_BAD_MAGIC;
	if (!sbx_wire_is_bg_op(op))
		return SBX_WIRE_BAD_OP;
	if (!memchr(r->message, '\0', sizeof r->message) || !memchr(i->id, '\0', sizeof i->id) ||
	    !memchr(i->owner, '\0', sizeof i->owner) ||
	    !memchr(i->session, '\0', sizeof i->session))
		return SBX_WIRE_BAD_STRINGS;
	if (r->rc > 0)
		return SBX_WIRE_BAD_RC;
	if (r->has_result > 1 || r->ended > 1 || r->truncated > 1 || r->reserved)
		return SBX_WIRE_BAD_FLAG;
	if (op != SBX_OP_RUN_OUTPUT ? r->data_len != 0 : r->data_len > SBX_RUN_MAX_CHUNK)
		return SBX_WIRE_TOO_LONG;
	if (op != SBX_OP_RUN_LIST ? r->count != 0 : r->count > SBX_WIRE_MAX_RUNS)
		return SBX_WIRE_TOO_LONG;
	if (r->has_result) {
		if (op != SBX_OP_RUN_STATUS)
			return SBX_WIRE_BAD_FLAG;
		return sbx_wire_check_res(&r->result, SBX_OP_RUN);
	}
	return SBX_WIRE_OK;
}

void sbx_wire_encode_run_op(uint32_t op, struct sbx_wire_req *h, struct sbx_wire_run *w)
{
	req_init(h, op);
	memset(w, 0, sizeof *w);
}

static bool id_ok(const char *id, size_t size);
static bool owner_ok(const char *s, size_t size);

static bool run_id_ok(const char *id, size_t size)
{
	size_t i;

	if (id[0] == '\0') {
		for (i = 0; i < size; i++)
			if (id[i] != '\0')
				return false;
		return true;
	}
	return id_ok(id, size);
}

enum sbx_wire_err sbx_wire_spec_to_run(const struct sbx_run_spec *spec, struct sbx_wire_run *w)
{
	memset(w, 0, sizeof *w);
	if (!spec)
		return SBX_WIRE_OK;
	if (strnlen(spec->id, sizeof spec->id) >= sizeof w->id ||
	    strnlen(spec->owner, sizeof spec->owner) >= sizeof w->owner ||
	    strnlen(spec->session, sizeof spec->session) >= sizeof w->session)
		return SBX_WIRE_BAD_STRINGS;
	memcpy(w->id, spec->id, strnlen(spec->id, sizeof spec->id));
	memcpy(w->owner, spec->owner, strnlen(spec->owner, sizeof spec->owner));
	memcpy(w->session, spec->session, strnlen(spec->session, sizeof spec->session));
	w->interactive = spec->interactive;
	w->stage = spec->compile;
	w->eof = spec->stdin_eof;
	w->keep_s = spec->keep_s;
	w->max_per_owner = spec->max_per_owner;
	w->max_per_session = spec->max_per_session;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_check_run(const struct sbx_wire_req *h, const struct sbx_wire_run *w)
{
	bool has_id = w->id[0] != '\0';

	if (h->op != SBX_OP_RUN_STREAM && h->op != SBX_OP_RUN_STDIN && h->op != SBX_OP_RUN_SIGNAL &&
	    !sbx_wire_is_bg_op(h->op))
		return SBX_WIRE_BAD_OP;
	if (h->op != SBX_OP_RUN_OUTPUT && (w->cursor || w->stream || w->wait_ms))
		return SBX_WIRE_BAD_FLAG;
	if (w->stage > 1 || w->interactive > 1 || w->eof > 1)
		return SBX_WIRE_BAD_FLAG;
	if (w->stage && (h->op != SBX_OP_RUN_STREAM || !has_id || h->has_stdin || w->eof))
		return SBX_WIRE_BAD_FLAG;
	if (!run_id_ok(w->id, sizeof w->id) || !owner_ok(w->owner, sizeof w->owner) ||
	    !owner_ok(w->session, sizeof w->session) || (has_id && w->owner[0] == '\0'))
		return SBX_WIRE_BAD_STRINGS;
	if (h->op == SBX_OP_RUN_LIST)
		return w->id[0] || w->data_len || w->eof || w->sig || w->interactive
			   ? SBX_WIRE_BAD_FLAG
			   : SBX_WIRE_OK;
	if (h->op == SBX_OP_RUN_START && (!has_id || w->owner[0] == '\0'))
		return SBX_WIRE_BAD_STRINGS;
	if (h->op == SBX_OP_RUN_STREAM || h->op == SBX_OP_RUN_START) {
		/* interactive: stdin is the broker's pipe; what comes with a RUN_STREAM (the stdin
		 * sent during its compile step) is written to it first, closed after it with eof */
		if (w->interactive && (!has_id || (h->has_stdin && h->op != SBX_OP_RUN_STREAM)))
			return SBX_WIRE_BAD_FLAG;
		if (w->eof && (h->op != SBX_OP_RUN_STREAM || !w->interactive))
			return SBX_WIRE_BAD_FLAG;
		return w->data_len || w->sig ? SBX_WIRE_BAD_FLAG : SBX_WIRE_OK;
	}
	if (!has_id)
		return SBX_WIRE_BAD_STRINGS;
	if (h->op == SBX_OP_RUN_STDIN)
		return w->data_len > SBX_RUN_MAX_STDIN ? SBX_WIRE_TOO_LONG
		       : w->sig			       ? SBX_WIRE_BAD_FLAG
						       : SBX_WIRE_OK;
	if (w->data_len || w->eof)
		return SBX_WIRE_BAD_FLAG;
	if (sbx_wire_is_bg_op(h->op)) {
		if (w->sig || w->interactive)
			return SBX_WIRE_BAD_FLAG;
		if (h->op == SBX_OP_RUN_OUTPUT && w->stream != 1 && w->stream != 2)
			return SBX_WIRE_BAD_ENUM;
		return SBX_WIRE_OK;
	}
	return w->sig == SIGINT || w->sig == SIGTERM || w->sig == SIGKILL ? SBX_WIRE_OK
									  : SBX_WIRE_BAD_ENUM;
}

enum sbx_wire_err sbx_wire_recv_run(int sock, const struct sbx_wire_req *h, struct sbx_wire_run *w)
{
	if (sbx_read_all(sock, w, sizeof *w) < 0)
		return SBX_WIRE_TRUNCATED;
	return sbx_wire_check_run(h, w);
}

enum sbx_wire_err sbx_wire_check_frame(const struct sbx_wire_frame *f)
{
	if (f->magic != SBX_WIRE_MAGIC)
		return SBX_WIRE_BAD_MAGIC;
	if (f->stream == SBX_WIRE_FRAME_END || f->stream == SBX_WIRE_FRAME_STDIN_EOF)
		return f->len ? SBX_WIRE_TOO_LONG : SBX_WIRE_OK;
	if (f->stream != 1 && f->stream != 2 && f->stream != SBX_WIRE_FRAME_STDIN)
		return SBX_WIRE_BAD_ENUM;
	return f->len == 0 || f->len > SBX_WIRE_MAX_FRAME ? SBX_WIRE_TOO_LONG : SBX_WIRE_OK;
}

/* ---- contexts ---- */

bool sbx_wire_is_ctx_op(uint32_t op)
{
	return op >= SBX_OP_CTX_CREATE && op <= SBX_OP_CTX_LIST;
}

void sbx_wire_encode_ctx(uint32_t op, struct sbx_wire_req *h, struct sbx_wire_ctx *c)
{
	req_init(h, op);
	memset(c, 0, sizeof *c);
	if (op == SBX_OP_CTX_CREATE)
		h->has_workdir = 1;
}

static bool id_ok(const char *id, size_t size)
{
	size_t i;

	for (i = 0; i < SBX_CTX_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	for (; i < size; i++)
		if (id[i] != '\0')
			return false;
	return true;
}

static bool owner_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size), i;

	if (n == size)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

enum sbx_wire_err sbx_wire_check_ctx(const struct sbx_wire_req *h, const struct sbx_wire_ctx *c)
{
	if (!sbx_wire_is_ctx_op(h->op))
		return SBX_WIRE_BAD_OP;
	if ((c->flags & ~SBX_WIRE_CTX_STREAM) != 0 || (c->flags && h->op != SBX_OP_CTX_CALL))
		return SBX_WIRE_BAD_FLAG;
	if (!owner_ok(c->owner, sizeof c->owner))
		return SBX_WIRE_BAD_STRINGS;
	if (h->op == SBX_OP_CTX_LIST) {
		size_t i;

		for (i = 0; i < sizeof c->id; i++)
			if (c->id[i] != '\0')
				return SBX_WIRE_BAD_STRINGS;
		return c->request_len ? SBX_WIRE_TOO_LONG : SBX_WIRE_OK;
	}
	if (!id_ok(c->id, sizeof c->id))
		return SBX_WIRE_BAD_STRINGS;
	if (h->op == SBX_OP_CTX_CREATE &&
	    (c->owner[0] == '\0' || (c->language != SBX_CTX_PYTHON && c->language != SBX_CTX_BASH)))
		return c->owner[0] == '\0' ? SBX_WIRE_BAD_STRINGS : SBX_WIRE_BAD_ENUM;
	if (h->op == SBX_OP_CTX_CALL) {
		if (c->request_len == 0)
			return SBX_WIRE_TRUNCATED;
		if (c->request_len > SBX_CTX_MAX_REQUEST)
			return SBX_WIRE_TOO_LONG;
	} else if (c->request_len != 0) {
		return SBX_WIRE_TOO_LONG;
	}
	return SBX_WIRE_OK;
}

void sbx_wire_ctx_res_init(struct sbx_wire_ctx_res *r, int rc, const char *message)
{
	memset(r, 0, sizeof *r);
	r->magic = SBX_WIRE_MAGIC;
	r->rc = rc;
	if (rc < 0)
		r->status = SBX_INTERNAL_ERROR;
	if (message)
		memcpy(r->message, message, strnlen(message, sizeof r->message - 1));
}

enum sbx_wire_err sbx_wire_check_ctx_res(const struct sbx_wire_ctx_res *r, uint32_t op)
{
	if (r->magic != SBX_WIRE_MAGIC)
		return SBX_WIRE_BAD_MAGIC;
	if (!sbx_wire_is_ctx_op(op))
		return SBX_WIRE_BAD_OP;
	if (!memchr(r->message, '\0', sizeof r->message))
		return SBX_WIRE_BAD_STRINGS;
	if (r->rc > 0)
		return SBX_WIRE_BAD_RC;
	if (r->status < SBX_OK || r->status > SBX_INTERNAL_ERROR || r->limit < SBX_LIMIT_NONE ||
	    r->limit > SBX_LIMIT_CPU)
		return SBX_WIRE_BAD_ENUM;
	if (r->lost > 1 || r->out_truncated > 1 || r->err_truncated > 1 || r->has_reply > 1)
		return SBX_WIRE_BAD_FLAG;
	if (op != SBX_OP_CTX_CALL && (r->out_len || r->err_len || r->reply_len))
		return SBX_WIRE_TOO_LONG;
	if (r->out_len > SBX_WIRE_MAX_OUTPUT_BYTES || r->err_len > SBX_WIRE_MAX_OUTPUT_BYTES ||
	    r->reply_len > SBX_WIRE_MAX_OUTPUT_BYTES)
		return SBX_WIRE_TOO_LONG;
	if (!r->has_reply && r->reply_len)
		return SBX_WIRE_BAD_FLAG;
	if (op != SBX_OP_CTX_LIST ? r->count != 0 : r->count > SBX_WIRE_MAX_CONTEXTS)
		return SBX_WIRE_TOO_LONG;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_check_ctx_info(const struct sbx_ctx_info *i)
{
	if (!memchr(i->id, '\0', sizeof i->id) || !owner_ok(i->owner, sizeof i->owner))
		return SBX_WIRE_BAD_STRINGS;
	if (i->language != SBX_CTX_PYTHON && i->language != SBX_CTX_BASH)
		return SBX_WIRE_BAD_ENUM;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_send_ctx_req(int sock, const struct sbx_wire_req *h,
					const struct sbx_wire_ctx *c, const int *fds, int nfds,
					const char *request)
{
	char buf[sizeof *h + sizeof *c];

	memcpy(buf, h, sizeof *h);
	memcpy(buf + sizeof *h, c, sizeof *c);
	if (sbx_send_fds(sock, buf, sizeof buf, fds, nfds) < 0)
		return SBX_WIRE_IO;
	if (c->request_len && sbx_write_all(sock, request, c->request_len) < 0)
		return SBX_WIRE_IO;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_recv_ctx(int sock, const struct sbx_wire_req *h, struct sbx_wire_ctx *c)
{
	if (sbx_read_all(sock, c, sizeof *c) < 0)
		return SBX_WIRE_TRUNCATED;
	return sbx_wire_check_ctx(h, c);
}

enum sbx_wire_err sbx_wire_send_ctx_res(int sock, const struct sbx_wire_ctx_res *r,
					const void *const parts[3], const uint64_t len[3])
{
	int i;

	if (sbx_write_all(sock, r, sizeof *r) < 0)
		return SBX_WIRE_IO;
	for (i = 0; parts && i < 3; i++)
		if (len[i] && sbx_write_all(sock, parts[i], (size_t)len[i]) < 0)
			return SBX_WIRE_IO;
	return SBX_WIRE_OK;
}

enum sbx_wire_err sbx_wire_recv_ctx_res(int sock, uint32_t op, struct sbx_wire_ctx_res *r)
{
	if (sbx_read_all(sock, r, sizeof *r) < 0)
		return SBX_WIRE_IO;
	return sbx_wire_check_ctx_res(r, op);
}
