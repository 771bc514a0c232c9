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

/* ---- runs with an id, streamed answers (runs.c) ---- */

/* A streamed answer in progress (API.md "Runs"). */
struct run_stream {
	const struct api_req *req;
	struct api_resp *resp; /* the request's: sent once begun */
	bool base64;
	const char *stage;	  /* "compile" while the compile step streams, else NULL */
	uint64_t sent[3];	  /* bytes of stdout [1] and stderr [2] sent in events */
	unsigned char held[3][4]; /* an incomplete character (or base64 group) held back */
	size_t held_len[3];
	uint64_t last_ms; /* when the last event went out (CLOCK_MONOTONIC) */
	bool start_held;  /* the headers and start event wait for the next flush */
};

/* The session's name in sbx_run_spec.session (63 bytes at most; longer ids are hashed). */
void runs_session_key(const char *id, char out[64]);
/* A fresh run id: 32 lowercase hex. 0 or -1. */
int runs_new_id(char out[SBX_RUN_ID_LEN + 1]);
/* Start the NDJSON answer and send the start event (run_id, or null when ""). 0, or -1 when the
 * request cannot stream (resp untouched). */
int run_stream_begin(struct run_stream *rs, const struct api_req *req, struct api_resp *resp,
		     bool base64, const char *run_id);
/* The same for a run about to start through sbx_client_run_stream with run_stream_output: the
 * headers and start event go out with the run's first output event, or at its first tick (a few
 * ms in), or with the end, whichever comes first: one write to nginx, one TLS record, one wakeup
 * of the client for them all (a short run's streaming costs about what its plain answer does). */
int run_stream_begin_held(struct run_stream *rs, const struct api_req *req, struct api_resp *resp,
			  bool base64, const char *run_id);
/* sbx_output_fn for sbx_client_run_stream: output events and keepalives; nonzero once the
 * client is gone (the broker then cancels the run). */
int run_stream_output(void *arg, int stream, const char *data, size_t len);
/* After a step's result: send what the events still lack of res's stdout/stderr (held partial
 * characters too), so that the events add up to it; counts start again for a next step. */
void run_stream_settle(struct run_stream *rs, const struct sbx_result *res);
/* The end event: answer's JSON (the whole usual response, or an error envelope plus
 * "http_status") with "type": "end". It goes out with the end of the request (main.c), in the
 * same write as FastCGI's end of the response, so nginx sends it and the closing chunk at once. */
void run_stream_end(struct run_stream *rs, struct api_resp *answer);

/* The store's runs_end hook (errors.c's h_store: every session removal, by DELETE or expiry,
 * goes through it), installed by runs.c (NULL when runs.c is not linked: session unit tests):
 * ctx is the config. */
extern void (*h_store_runs_end)(void *ctx, const char *owner, const char *session_id);

/* The general form of run_sandboxed and run_sandboxed_stream: what to run and, for a streamed
 * run, where its output goes (out with out_arg, as sbx_client_run_stream), its id (spec) and
 * whose connection cancels it when it closes (watch). */
struct run_call {
	const char *const *argv, *const *env;
	int layer_fd; /* the read-only package layer, or -1 */
	sbx_output_fn out;
	void *out_arg;
	const struct sbx_run_spec *spec;
	const struct api_req *watch;
};
int run_sandboxed_call(const struct config *cfg, int dirfd, const struct run_call *call,
		       const char *stdin_buf, size_t stdin_len, const struct sbx_limits *limits,
		       struct sbx_result *res, struct api_resp *resp);
/* run_sandboxed() with live output through rs (NULL: as run_sandboxed) and spec (may be NULL);
 * stdin_buf must be NULL with spec->interactive. layer_fd: a package layer mounted read-only at
 * SBX_LAYER_DIR (packages.h), or -1. */
int run_sandboxed_stream(const struct config *cfg, int dirfd, int layer_fd, const char *const *argv,
			 const char *const *env, const char *stdin_buf, size_t stdin_len,
			 const struct sbx_limits *limits, struct run_stream *rs,
			 const struct sbx_run_spec *spec, struct sbx_result *res,
			 struct api_resp *resp);

/* ---- the handlers (route table in routes.c) ---- */

/* The handlers, one X per route function. clang-format cannot settle on a layout for this list
 * (it changes it on every pass), so it is left as written. */
/* clang-format off */
#define HANDLERS(X)                                                                                \
	X(h_root) X(h_health) X(h_metrics) X(h_languages) X(h_tools) X(h_tool_call) X(h_openapi) X(h_execute)     \
	X(h_sessions_create) X(h_sessions_list) X(h_session_get) X(h_session_delete)               \
	X(h_session_fork) X(h_files_tree) X(h_file_get) X(h_file_put) X(h_file_delete)             \
	X(h_session_move) X(h_session_run) X(h_session_execute) X(h_evaluate)                      \
	X(h_session_evaluate) X(h_seed_write_file) X(h_seed_read_file) X(h_seed_delete_file)       \
	X(h_seed_rename_file) X(h_seed_fork_session) X(h_seed_run) X(h_seed_evaluate_code)     \
	X(h_contexts_create) X(h_contexts_list) X(h_context_execute) X(h_session_repl)             \
	X(h_context_variables) X(h_context_variable_put) X(h_context_interrupt)                    \
	X(h_context_restart) X(h_context_delete) X(h_run_stdin) X(h_run_signal)                    \
	X(h_session_runs_start) X(h_session_runs_list) X(h_session_run_get)                        \
	X(h_session_run_output) X(h_session_run_delete) X(h_packages_list) X(h_session_packages)
/* clang-format on */
#define DECLARE_HANDLER(name) void name(const struct api_req *req, struct api_resp *resp);
HANDLERS(DECLARE_HANDLER)
/* Piston compatibility (piston.c). */
DECLARE_HANDLER(h_piston_execute)
DECLARE_HANDLER(h_piston_runtimes)
#undef DECLARE_HANDLER

/* Serve req with fn, honouring an Idempotency-Key header (idempotency.c): a 2xx answer is kept
 * per client and key for 24 h and replayed for the same request; another request with the key
 * is 422 idempotency_key_reused. Without the header: fn(req, resp). */
void h_idempotent(const struct api_req *req, struct api_resp *resp, api_handler fn);

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
	H_WHY_CTX_CLIENT,	  /* EDQUOT: the client has limit live contexts */
	H_WHY_CTX_MACHINE,	  /* EAGAIN: the machine's contexts (cap or memory) are full */
	H_WHY_CTX_BUSY,		  /* EBUSY: another call kept the context busy for limit ms */
	H_WHY_CTX_MISSING,	  /* ENOENT: no context msg in this session */
	H_WHY_CTX_MANY,		  /* EUSERS: the session has limit contexts recorded */
	H_WHY_RUN_CAP,		  /* EDQUOT: the client's or session's background runs (limit) */
	H_WHY_RUN_MACHINE,	  /* EAGAIN: the machine's background runs are full */
};

/* store_conf.ctx_end (errors.c): ends one context of a session that goes; ctx is the config. */
void h_ctx_end(void *ctx, const char *id);

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
