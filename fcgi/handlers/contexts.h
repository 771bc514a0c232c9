/* contexts.h: what the context routes (contexts.c) and the checks of their kernel's words
 * (contexts_reply.c) share. */
#ifndef SBX_HANDLERS_CONTEXTS_H
#define SBX_HANDLERS_CONTEXTS_H

#include "handlers.h"

/* A streamed cell in progress ("stream": true): the NDJSON answer, and the results sent. */
struct ctx_live {
	struct run_stream rs;
	struct json_object *results; /* the "result" events sent, as the end event repeats them */
	uint64_t budget;	     /* bytes of display data still allowed */
	bool cut;		     /* something was dropped (results_truncated) */
};

void ctx_live_init(struct ctx_live *lv, const struct api_req *req);
void ctx_live_free(struct ctx_live *lv);
/* sbx_output_fn for sbx_client_ctx_call_stream: stdout/stderr and keepalives as for runs
 * (run_stream_output), display lines as "result" events. Nonzero once the client is gone. */
int ctx_live_output(void *arg, int stream, const char *data, size_t len);

/* The kernel's reply to op as a JSON object, or NULL when it is not one. Caller owns it. */
struct json_object *ctx_reply_parse(const struct sbx_cell_result *res, const char *op);
/* A string member of o no longer than max (bytes), else NULL. */
const char *ctx_str_member(struct json_object *o, const char *key, size_t max);
/* The error member of an execute reply: {name, value, traceback[]} or NULL. */
struct json_object *ctx_error_json(struct json_object *reply);
/* The cell result of API.md: the run result, execution_count, results, error, state. With lv
 * (a streamed cell), its results are the ones already sent, then any the reply adds. */
struct json_object *ctx_cell_json(const struct api_req *req, const struct sbx_cell_result *res,
				  bool lost, bool base64, struct ctx_live *lv);

#endif
