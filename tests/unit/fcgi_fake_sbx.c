/* fcgi_fake_sbx.c: a scripted stand-in for the broker client, linked into fcgi unit tests only.
 * Tests set fake_sbx_next (the result to return) and read fake_sbx_last (what was asked). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fcgi_fake_sbx.h"

struct sbx_result fake_sbx_next;
int fake_sbx_rc;
int fake_sbx_calls;
char fake_sbx_argv[16][256];
char fake_sbx_stdin[4096];
struct sbx_limits fake_sbx_limits;
struct sbx_probe fake_sbx_probe = {2, true, "fake broker"};
int fake_sbx_probe_rc;

int sbx_client_run(const char *socket_path, const struct sbx_request *req, struct sbx_result *res)
{
	size_t i;
	ssize_t n;

	(void)socket_path;
	fake_sbx_calls++;
	memset(fake_sbx_argv, 0, sizeof(fake_sbx_argv));
	for (i = 0; req->argv[i] && i < 16; i++)
		strncpy(fake_sbx_argv[i], req->argv[i], 255);
	memset(fake_sbx_stdin, 0, sizeof(fake_sbx_stdin));
	if (req->stdin_fd >= 0 &&
	    (n = pread(req->stdin_fd, fake_sbx_stdin, sizeof(fake_sbx_stdin) - 1, 0)) < 0)
		fake_sbx_stdin[0] = '\0';
	fake_sbx_limits = req->limits;
	*res = fake_sbx_next;
	res->out = malloc(fake_sbx_next.out_len + 1);
	res->err = malloc(fake_sbx_next.err_len + 1);
	memcpy(res->out, fake_sbx_next.out ? fake_sbx_next.out : "", fake_sbx_next.out_len);
	memcpy(res->err, fake_sbx_next.err ? fake_sbx_next.err : "", fake_sbx_next.err_len);
	return fake_sbx_rc;
}

/* Runs: a streamed run hands its whole output over at once; run ids are never found. */
int sbx_client_run_stream(const char *socket_path, const struct sbx_request *req,
			  const struct sbx_run_spec *spec, sbx_output_fn on_output, void *arg,
			  struct sbx_result *res)
{
	int rc = sbx_client_run(socket_path, req, res);

	(void)spec;
	if (rc == 0 && on_output) {
		if (res->out_len)
			on_output(arg, 1, res->out, res->out_len);
		if (res->err_len)
			on_output(arg, 2, res->err, res->err_len);
	}
	return rc;
}

int sbx_client_run_stdin(const char *socket_path, const char *id, const char *owner,
			 const void *data, size_t len, bool eof)
{
	(void)socket_path, (void)id, (void)owner, (void)data, (void)len, (void)eof;
	return -ENOENT;
}

int sbx_client_run_signal(const char *socket_path, const char *id, const char *owner, int sig)
{
	(void)socket_path, (void)id, (void)owner, (void)sig;
	return -ENOENT;
}

int sbx_client_run_start(const char *socket_path, const struct sbx_request *req,
			 const struct sbx_run_spec *spec, char *err, size_t errlen)
{
	(void)socket_path, (void)req, (void)spec;
	snprintf(err, errlen, "no background runs in the fake broker");
	return -ENOSYS;
}

int sbx_client_run_status(const char *socket_path, const char *id, const char *owner,
			  struct sbx_run_info *info, struct sbx_result *res)
{
	(void)socket_path, (void)id, (void)owner, (void)info, (void)res;
	return -ENOENT;
}

int sbx_client_run_output(const char *socket_path, const char *id, const char *owner, int stream,
			  uint64_t cursor, uint32_t wait_ms, struct sbx_run_chunk *out)
{
	(void)socket_path, (void)id, (void)owner, (void)stream, (void)cursor, (void)wait_ms,
	    (void)out;
	return -ENOENT;
}

int sbx_client_run_list(const char *socket_path, const char *owner, const char *session,
			struct sbx_run_info **out, size_t *n)
{
	(void)socket_path, (void)owner, (void)session;
	*out = NULL;
	*n = 0;
	return 0;
}

int sbx_client_run_kill(const char *socket_path, const char *id, const char *owner)
{
	(void)socket_path, (void)id, (void)owner;
	return -ENOENT;
}

int sbx_client_probe(const char *socket_path, struct sbx_probe *out)
{
	(void)socket_path;
	*out = fake_sbx_probe;
	return fake_sbx_probe_rc;
}

/* No quota call scripted: fail closed, as a broker that cannot set one (a btrfs run root is then
 * refused: tests on btrfs see the store's VOLUME error). */
int sbx_client_set_quota(const char *socket_path, int dirfd, uint64_t bytes, char *err,
			 size_t errlen)
{
	(void)socket_path;
	(void)dirfd;
	(void)bytes;
	snprintf(err, errlen, "the fake broker sets no quota");
	return -ENOSYS;
}

/* Contexts: scripted as runs are. A call returns fake_ctx_call_rc with fake_ctx_next copied
 * (out, err and reply duplicated); the request it got is kept in fake_ctx_request. */
int fake_ctx_create_rc, fake_ctx_call_rc, fake_ctx_creates, fake_ctx_calls, fake_ctx_deletes;
int fake_ctx_enoent; /* the next calls answering -ENOENT (a context the broker lost) */
struct sbx_cell_result fake_ctx_next;
char fake_ctx_request[4096];

static char *dup_or_empty(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s ? s : "", s ? len : 0);
		d[s ? len : 0] = '\0';
	}
	return d;
}

int sbx_client_ctx_create(const char *socket_path, const struct sbx_ctx_spec *spec, char *err,
			  size_t errlen)
{
	(void)socket_path;
	(void)spec;
	snprintf(err, errlen, "fake");
	fake_ctx_creates++;
	return fake_ctx_create_rc;
}

int sbx_client_ctx_call(const char *socket_path, const char *id, const struct sbx_cell *cell,
			int cancel_fd, struct sbx_cell_result *res)
{
	(void)socket_path;
	(void)id;
	(void)cancel_fd;
	fake_ctx_calls++;
	if (fake_ctx_enoent > 0) {
		fake_ctx_enoent--;
		return -ENOENT;
	}
	snprintf(fake_ctx_request, sizeof(fake_ctx_request), "%.*s", (int)cell->request_len,
		 cell->request);
	*res = fake_ctx_next;
	res->out = dup_or_empty(fake_ctx_next.out, fake_ctx_next.out_len);
	res->err = dup_or_empty(fake_ctx_next.err, fake_ctx_next.err_len);
	res->reply =
	    fake_ctx_next.reply ? dup_or_empty(fake_ctx_next.reply, fake_ctx_next.reply_len) : NULL;
	return fake_ctx_call_rc;
}

/* Streamed: the call above, then its output delivered whole (as a holder that forwarded
 * nothing before the end would). */
int sbx_client_ctx_call_stream(const char *socket_path, const char *id, const struct sbx_cell *cell,
			       int cancel_fd, sbx_output_fn on_output, void *arg,
			       struct sbx_cell_result *res)
{
	int rc = sbx_client_ctx_call(socket_path, id, cell, cancel_fd, res);

	if (rc == 0 && on_output &&
	    ((res->out_len && on_output(arg, 1, res->out, res->out_len)) ||
	     (res->err_len && on_output(arg, 2, res->err, res->err_len))))
		rc = -ECANCELED;
	return rc;
}

int sbx_client_ctx_interrupt(const char *socket_path, const char *id)
{
	(void)socket_path;
	(void)id;
	return 0;
}

int sbx_client_ctx_restart(const char *socket_path, const char *id)
{
	(void)socket_path;
	(void)id;
	return 0;
}

int sbx_client_ctx_delete(const char *socket_path, const char *id)
{
	(void)socket_path;
	(void)id;
	fake_ctx_deletes++;
	return 0;
}

int sbx_client_ctx_list(const char *socket_path, const char *owner, struct sbx_ctx_info **out,
			size_t *n)
{
	(void)socket_path;
	(void)owner;
	*out = NULL;
	*n = 0;
	return 0;
}

void sbx_cell_result_free(struct sbx_cell_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	free(res->reply);
	memset(res, 0, sizeof(*res));
}

void sbx_result_free(struct sbx_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	memset(res, 0, sizeof(*res));
}

const char *sbx_status_name(enum sbx_status status)
{
	static const char *const names[] = {
	    "ok", "error", "signal", "timeout", "memory_limit", "output_limit", "internal_error"};

	return (unsigned)status < 7 ? names[status] : "internal_error";
}

const char *sbx_limit_name(enum sbx_limit_kind kind)
{
	return kind == SBX_LIMIT_WALL ? "wall" : kind == SBX_LIMIT_CPU ? "cpu" : NULL;
}

const char *sbx_signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGKILL:
		return "SIGKILL";
	case SIGABRT:
		return "SIGABRT";
	}
	return NULL;
}
