/* runs_client.c: the client side of runs (sandbox.h, section "runs"): streaming, stdin, signals,
 * background runs. Used by the FastCGI workers, which never hold the sandbox's privileges. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int sbx_client_run_stream(const char *socket_path, const struct sbx_request *req,
			  const struct sbx_run_spec *spec, sbx_output_fn on_output, void *arg,
			  struct sbx_result *res)
{
	(void)spec;
	(void)on_output;
	(void)arg;
	return sbx_client_run(socket_path, req, res);
}

int sbx_client_run_stdin(const char *socket_path, const char *id, const char *owner,
			 const void *data, size_t len, bool eof)
{
	(void)socket_path, (void)id, (void)owner, (void)data, (void)len, (void)eof;
	return -ENOSYS;
}

int sbx_client_run_signal(const char *socket_path, const char *id, const char *owner, int sig)
{
	(void)socket_path, (void)id, (void)owner, (void)sig;
	return -ENOSYS;
}

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
