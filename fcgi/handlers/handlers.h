/* handlers.h: what the handlers share: the store's configuration drawn from the service's, the
 * session lookup every session route starts with, and the one table (errors.c) that turns a
 * store failure into an HTTP status, error code, message and Retry-After. */
#ifndef SBX_HANDLERS_H
#define SBX_HANDLERS_H

#include "../config.h"
#include "../http/core.h"
#include "../store/store.h"

/* The route table (route_table.c), installed into http/ when the program starts. */
extern const struct route route_table[];
extern const size_t route_count;

/* ---- running code (run.c) ---- */

/* Merge a request's "limits" object (may be NULL) over cfg->defaults (and lang->extra when lang
 * is not NULL) into out; above a maximum: 400 naming the field and the maximum. Returns 0 or -1. */
int run_parse_limits(const struct config *cfg, const struct lang *lang, struct json_object *limits,
		     struct sbx_limits *out, struct api_resp *resp);

/* Run argv in the sandbox with dirfd as /work, stdin bytes (may be NULL/0). On a sandbox failure
 * fills a 500 internal_error and returns -1; otherwise 0 with res filled (caller frees it). */
int run_sandboxed(const struct config *cfg, int dirfd, const char *const *argv,
		  const char *const *env, const char *stdin_buf, size_t stdin_len,
		  const struct sbx_limits *limits, struct sbx_result *res, struct api_resp *resp);

/* The run-result object of API.md (status, exit_code, signal, stdout, ...). Caller owns it. */
struct json_object *run_result_json(const struct sbx_result *res, bool base64);

/* ---- the handlers (route table in routes.c) ---- */

/* The handlers, one X per route function. clang-format cannot settle on a layout for this list
 * (it changes it on every pass), so it is left as written. */
/* clang-format off */
#define HANDLERS(X)                                                                                \
	X(h_root) X(h_health) X(h_metrics) X(h_languages) X(h_tools) X(h_openapi) X(h_execute)     \
	X(h_sessions_create) X(h_sessions_list) X(h_session_get) X(h_session_delete)               \
	X(h_session_fork) X(h_files_tree) X(h_file_get) X(h_file_put) X(h_file_delete)             \
	X(h_session_move) X(h_session_run) X(h_session_execute) X(h_evaluate)                      \
	X(h_session_evaluate) X(h_seed_write_file) X(h_seed_read_file) X(h_seed_delete_file)       \
	X(h_seed_rename_file) X(h_seed_fork_session) X(h_seed_run) X(h_seed_evaluate_code)      \
	X(h_packages_list) X(h_session_packages)
/* clang-format on */
#define DECLARE_HANDLER(name) void name(const struct api_req *req, struct api_resp *resp);
HANDLERS(DECLARE_HANDLER)
#undef DECLARE_HANDLER

/* Broker time and runs of the current request (run.c); main.c resets them per request. */
extern double run_sandbox_ms;
extern unsigned run_count;

/* The OpenAPI document (info.c), for the route-table agreement test. Caller owns it, NULL if the
 * file cannot be read. */
struct json_object *info_openapi_load(char *err, size_t errlen);

/* The store's view of cfg (a static copy refreshed at each call; set_quota is the broker's). */
const struct store_conf *h_store(const struct config *cfg);

/* Where a failed call was pointed: the session id, and its one or two paths with the request's
 * field names for them (any may be NULL). */
struct h_where {
	const char *id;
	const char *field, *path;   /* e->at == 0 */
	const char *field2, *path2; /* e->at == 1 */
};

/* Reasons of the run path and of admission, beyond the store's: the same table. */
enum h_why {
	H_WHY_ADMIT_CLIENT = 100, /* EUSERS: the client has limit runs in progress */
	H_WHY_ADMIT_MACHINE,	  /* EBUSY: the machine runs as much as it may */
	H_WHY_SLOTS,		  /* EAGAIN: no sandbox slot within limit ms */
	H_WHY_SANDBOX,		  /* EIO: the broker or the sandbox failed; msg says how */
	H_WHY_STDIN,		  /* errno: stdin could not be held for the run */
};

/* Fill resp for a failure of the run path or admission (why: enum h_why) through the table. */
void h_fail(struct api_resp *resp, int err, int why, uint64_t limit, const char *msg);

/* Fill resp from e through the error table. */
void h_store_error(struct api_resp *resp, const struct store_err *e, const struct h_where *w);
/* The same for a bare errno about path (field names it; both may be NULL). */
void h_errno(struct api_resp *resp, int err, const char *field, const char *path);

/* session_open for req's client: the session, or NULL with resp filled. */
struct session *h_session_open(const struct api_req *req, const char *id, struct api_resp *resp);
/* Seed routes: as h_session_open, but the first use creates the session (id chosen by client). */
struct session *h_session_open_or_create(const struct api_req *req, const char *id,
					 struct api_resp *resp);

/* "2026-11-21T21:56:35Z" into out (at least 21 bytes). */
void h_iso_time(int64_t t, char *out, size_t outlen);
/* Add key: the ISO time of t to the object o. */
void h_json_time(struct json_object *o, const char *key, int64_t t);

/* 0 when the disk reserve allows a new run, session or write; else -1 with a 507 filled. */
int h_reserve_check(const struct api_req *req, struct api_resp *resp);

#endif
