/* api.h: the contract between the FastCGI loop, the route table and the handlers.
 *
 * Handlers never touch FCGX: they take a struct api_req and fill a struct api_resp, so they can be
 * unit-tested without sockets. main.c owns the request lifetime: everything in api_req is borrowed
 * and valid until the handler returns; everything put into api_resp is owned by the response and
 * freed by api_resp_free(). */
#ifndef SBX_API_H
#define SBX_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "../../sandbox/sandbox.h"

/* ---- configuration (config.c): one JSON file, defaults and maxima of every limit ---- */

struct lang {
	char *id;               /* "python" */
	char *version;          /* "3.11.2" */
	char **aliases;         /* NULL-terminated: "py", "python3" */
	char *source_file;      /* "main.py": the file the code is written to */
	char **compile;         /* NULL-terminated argv, or NULL when interpreted */
	char **run;             /* NULL-terminated argv; "{file}" is replaced by source_file,
	                           "{args}" expands to the request's args */
	struct sbx_limits extra; /* non-zero fields override the defaults for this language */
};

#define CONFIG_SHARD_MAX 16 /* a shard name, bytes: "<shard>-<uuid>" fits a 64-byte session id */

struct config {
	char *state_dir;          /* sessions/, scratch/ live here */
	char *broker_socket;      /* sbxd's Unix socket */
	char *pool_listen;        /* health pool only: the main pool's socket path or HOST:PORT */
	char *shard;              /* this host's name in a cluster (1-16 of [a-z0-9]), prefixed to
	                             the ids of the sessions it makes; NULL on a single host */
	struct sbx_limits defaults;
	struct sbx_limits maxima;
	uint64_t max_body_bytes;  /* JSON bodies; raw uploads are bounded by the quota */
	uint64_t session_ttl_s;   /* idle TTL */
	uint64_t session_max_lifetime_s;
	uint64_t session_quota_bytes;
	uint32_t sessions_per_client;
	uint32_t runs_per_client; /* concurrent runs per client; past it: 429 */
	uint32_t runs_machine;    /* runs in flight on the machine, all workers together; past it
	                             (after queue_wait_ms): 503 busy. 0: no machine cap */
	uint32_t runs_share_pct;  /* most of the machine's runs one client may hold, in percent */
	uint32_t runs_reserve;    /* machine slots only a client with no run in flight may take */
	uint32_t pool_workers;    /* FastCGI workers of the pool (SBX_POOL_WORKERS); 0: unknown.
	                             Runs hold a worker each: runs_machine is capped by it */
	char **metrics_clients;   /* clients that may read GET /v1/metrics (NULL-terminated) */
	uint32_t queue_wait_ms;   /* how long a run waits for a free sandbox slot before 503 */
	uint32_t max_cases;       /* evaluate: cases per request */
	uint64_t evaluate_wall_ms;/* evaluate: the whole request's wall time */
	struct lang *langs;
	size_t nlangs;
};

/* Load path into cfg. Returns 0, or -1 with a message in err. cfg is owned by the caller and
 * released with config_free(). */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);
void config_free(struct config *cfg);
/* Find a language by id or alias; borrowed pointer or NULL. */
const struct lang *config_lang(const struct config *cfg, const char *name);

/* ---- requests and responses ---- */

#define API_MAX_PARAMS 2

struct api_req {
	const char *method;       /* "GET", "POST", ... */
	const char *path;         /* URL-decoded path, no query string */
	const char *query;        /* raw query string, "" when none */
	const char *client;       /* client name from nginx (REMOTE_USER); "" when unauthenticated */
	const char *request_id;
	const char *content_type; /* "" when none */
	const char *accept;       /* "" when none */
	const char *body;         /* whole body for JSON routes (NUL-terminated), NULL otherwise */
	size_t body_len;
	/* Raw-body routes (ROUTE_STREAM_IN) read the body themselves, in chunks: returns bytes read,
	 * 0 at the end, -1 on error. body_total is CONTENT_LENGTH (or -1 when unknown). */
	ssize_t (*read_body)(void *ctx, char *buf, size_t len);
	void *read_ctx;
	int64_t body_total;
	const char *params[API_MAX_PARAMS]; /* path captures: {id}, then {path} */
	const struct config *cfg;
};

struct api_resp {
	int status;                  /* HTTP status */
	struct json_object *json;    /* JSON body (owned), or NULL */
	int file_fd;                 /* raw body streamed from this fd (owned, closed), or -1 */
	off_t file_len;
	const char *content_type;    /* for file_fd bodies; static string */
	char headers[512];           /* extra header lines, each ending in "\r\n" */
	const char *error_code;      /* set by api_error(), for the log line */
};

typedef void (*api_handler)(const struct api_req *req, struct api_resp *resp);

void api_resp_init(struct api_resp *resp);
void api_resp_free(struct api_resp *resp);

/* Set a JSON body (takes ownership) and status. */
void api_json(struct api_resp *resp, int status, struct json_object *body);

/* The error envelope {"error":{"code","message"[,"field"]}}; field may be NULL. */
void api_error(struct api_resp *resp, int status, const char *code, const char *field,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Append one header line ("Retry-After: 1"); silently dropped if it does not fit. */
void api_header(struct api_resp *resp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- strict JSON input (json.c) ---- */

/* Parse req->body as a JSON object (depth- and size-limited). On failure fills a 400 and returns
 * NULL. The caller owns the returned object (json_object_put). */
struct json_object *api_body_object(const struct api_req *req, struct api_resp *resp);

/* Reject members not in allowed (NULL-terminated): 400 unknown_field naming it. Returns 0 or -1. */
int api_only_fields(struct json_object *obj, const char *const *allowed, struct api_resp *resp);

/* Typed getters: 0 found, 1 absent (and not required), -1 wrong type or missing-but-required (a
 * 400 naming the field is filled). Strings are borrowed from obj. */
int api_get_string(struct json_object *obj, const char *key, bool required, const char **out,
                   size_t *len, struct api_resp *resp);
int api_get_bool(struct json_object *obj, const char *key, bool *out, struct api_resp *resp);
int api_get_u64(struct json_object *obj, const char *key, uint64_t *out, struct api_resp *resp);
int api_get_array(struct json_object *obj, const char *key, struct json_object **out,
                  struct api_resp *resp);
int api_get_object(struct json_object *obj, const char *key, struct json_object **out,
                   struct api_resp *resp);

/* Bytes to a JSON string: invalid UTF-8 becomes U+FFFD. Caller owns the result. */
struct json_object *api_utf8_string(const char *buf, size_t len);

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

/* ---- sessions (session.c) ---- */

struct session;

/* Open the caller's session id (any id form the route allows) and touch last_used_at. 404 for a
 * missing, expired or foreign session (same answer). Caller closes with session_close(). */
struct session *session_open(const struct api_req *req, const char *id, struct api_resp *resp);
/* Seed routes: as session_open, but the first use creates the session (id chosen by client). */
struct session *session_open_or_create(const struct api_req *req, const char *id,
                                       struct api_resp *resp);
/* O_PATH|O_DIRECTORY fd of the session's file root; borrowed, valid until session_close(). */
int session_root_fd(const struct session *s);
const char *session_id(const struct session *s);
void session_close(struct session *s);

/* A fresh private directory for a stateless run; removed by scratch_destroy(). Returns an
 * O_DIRECTORY fd or -1 with a 500 filled. */
int scratch_create(const struct config *cfg, char *path, size_t pathlen, struct api_resp *resp);
void scratch_destroy(const struct config *cfg, int fd, const char *path);

/* ---- the handlers (route table in routes.c) ---- */

#define HANDLERS(X) \
	X(h_root) X(h_health) X(h_metrics) X(h_languages) X(h_tools) X(h_openapi) X(h_execute) \
	X(h_sessions_create) X(h_sessions_list) X(h_session_get) X(h_session_delete) \
	X(h_session_fork) X(h_files_tree) X(h_file_get) X(h_file_put) X(h_file_delete) \
	X(h_session_move) X(h_session_run) X(h_session_execute) X(h_evaluate) \
	X(h_session_evaluate) X(h_seed_write_file) X(h_seed_read_file) X(h_seed_delete_file) \
	X(h_seed_rename_file) X(h_seed_fork_session) X(h_seed_run) X(h_seed_evaluate_code)
#define DECLARE_HANDLER(name) void name(const struct api_req *req, struct api_resp *resp);
HANDLERS(DECLARE_HANDLER)
#undef DECLARE_HANDLER

#endif
