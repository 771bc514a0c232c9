/* ctx_client.c: the unprivileged side of contexts (sandbox.h, section "contexts"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int sbx_client_ctx_create(const char *socket_path, const struct sbx_ctx_spec *spec, char *err,
			  size_t errlen)
{
	(void)socket_path;
	(void)spec;
	sbx_set_error(err, errlen, "contexts are not implemented yet");
	return -ENOSYS;
}

int sbx_client_ctx_call(const char *socket_path, const char *id, const struct sbx_cell *cell,
			int cancel_fd, struct sbx_cell_result *res)
{
	(void)socket_path;
	(void)id;
	(void)cell;
	(void)cancel_fd;
	memset(res, 0, sizeof *res);
	res->status = SBX_INTERNAL_ERROR;
	return -ENOSYS;
}

int sbx_client_ctx_interrupt(const char *socket_path, const char *id)
{
	(void)socket_path;
	(void)id;
	return -ENOSYS;
}

int sbx_client_ctx_restart(const char *socket_path, const char *id)
{
	(void)socket_path;
	(void)id;
	return -ENOSYS;
}

int sbx_client_ctx_delete(const char *socket_path, const char *id)
{
	(void)socket_path;
	(void)id;
	return -ENOSYS;
}

int sbx_client_ctx_list(const char *socket_path, const char *owner, struct sbx_ctx_info **out,
			size_t *n)
{
	(void)socket_path;
	(void)owner;
	*out = NULL;
	*n = 0;
	return -ENOSYS;
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
