/* api.h: the contract between the FastCGI loop, the route table and the handlers: requests,
 * responses, the error envelope, strict JSON input. Knows no sessions and no sandbox.
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

struct config; /* the service's configuration (fcgi/config.h): opaque to http/ */

/* ---- requests and responses ---- */

#define API_MAX_PARAMS 3

struct api_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* URL-decoded path, no query string */
	const char *query;  /* raw query string, "" when none */
	const char *client; /* client name from nginx (REMOTE_USER); "" when unauthenticated */
	const char *request_id;
	const char *content_type; /* "" when none */
	const char *accept;	  /* "" when none */
	const char *body;	  /* whole body for JSON routes (NUL-terminated), NULL otherwise */
	size_t body_len;
	/* Raw-body routes (ROUTE_STREAM_IN) read the body themselves, in chunks: returns bytes
	 * read, 0 at the end, -1 on error. body_total is CONTENT_LENGTH (or -1 when unknown). */
	ssize_t (*read_body)(void *ctx, char *buf, size_t len);
	void *read_ctx;
	int64_t body_total;
	const char *params[API_MAX_PARAMS]; /* path captures in order: {id}, then {path} or {cid},
					       then {name} */
	const struct config *cfg;
	char **env; /* all FastCGI params, "NAME=value" (HTTP_* are the request headers); may be
		       NULL */
	/* With conn_watch, conn_fd is the connection to nginx, its body fully read: it turns
	 * readable (EOF) when nginx gives up on the request (the client went away), so a
	 * long call can be cancelled. Without it (unit tests, streamed bodies): nothing to watch.
	 */
	bool conn_watch;
	int conn_fd;
	/* Streamed answers (ndjson): how the handler writes the response as it goes; NULL when
	 * nothing can stream (unit tests): api_stream_begin() then fails. */
	const struct api_out *out;
};

/* A response written while the handler runs (main.c implements it over FastCGI). begin sends
 * the status and headers; write sends bytes and flushes them to nginx at once (with whatever
 * was held before it), unless the response's hold is set: then they wait for the next write
 * that flushes, or for the end of the request. Both return 0, or -1 once the connection is
 * gone. */
struct api_out {
	int (*begin)(void *ctx, int status, const char *content_type, const char *headers);
	int (*write)(void *ctx, const char *buf, size_t len);
	void *ctx;
};

struct api_resp {
	int status;		  /* HTTP status */
	struct json_object *json; /* JSON body (owned), or NULL */
	int file_fd;		  /* raw body streamed from this fd (owned, closed), or -1 */
	off_t file_len;
	const char *content_type; /* for file_fd bodies; static string */
	char headers[512];	  /* extra header lines, each ending in "\r\n" */
	const char *error_code;	  /* set by api_error(), for the log line */
	bool sent;		  /* streamed: headers and body already written (status is
				     what was sent) */
	bool gone;		  /* streamed: the client went away mid-answer */
	bool hold;		  /* streamed: the next begin/write is not flushed yet (set
				     around one write only: run_stream.c) */
};

typedef void (*api_handler)(const struct api_req *req, struct api_resp *resp);

void api_resp_init(struct api_resp *resp);
void api_resp_free(struct api_resp *resp);

/* Set a JSON body (takes ownership) and status. */
void api_json(struct api_resp *resp, int status, struct json_object *body);

/* The error envelope {"error":{"code","message"[,"field"]}}; field may be NULL. */
void api_error(struct api_resp *resp, int status, const char *code, const char *field,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Add "request_id" to the error envelope in resp (nothing when resp holds none), so that a
 * client that kept only the body can still quote the X-Request-Id of the failed request. */
void api_error_request_id(struct api_resp *resp, const char *request_id);

/* Append one header line ("Retry-After: 1"); silently dropped if it does not fit. */
void api_header(struct api_resp *resp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- streamed answers (json.c) ---- */

/* Start an application/x-ndjson answer (200, X-Accel-Buffering: no so nginx passes every line
 * on at once, plus resp->headers). 0, or -1 when the request cannot stream (resp untouched). */
int api_stream_begin(const struct api_req *req, struct api_resp *resp);
/* One event: obj as one compact JSON line, flushed (takes ownership of obj). 0, or -1 once the
 * client is gone (resp->gone set; later calls do nothing). */
int api_stream_event(const struct api_req *req, struct api_resp *resp, struct json_object *obj);

/* ---- strict JSON input (json.c) ---- */

/* Parse req->body as a JSON object (depth- and size-limited). On failure fills a 400 and returns
 * NULL. The caller owns the returned object (json_object_put). */
struct json_object *api_body_object(const struct api_req *req, struct api_resp *resp);

/* Parse req->body as any one JSON value, as strictly as api_body_object (a bare 1, true or null
 * included). Returns 0 with *out set (NULL for null; the caller owns it), or -1 with a 400 in
 * resp. */
int api_body_value(const struct api_req *req, struct api_resp *resp, struct json_object **out);

/* Reject members not in allowed (NULL-terminated): 400 unknown_field naming it. Returns 0 or -1. */
int api_only_fields(struct json_object *obj, const char *const *allowed, struct api_resp *resp);

/* Typed getters: 0 found, 1 absent (and not required), -1 wrong type or missing-but-required (a
 * 400 naming the field is filled). Strings are borrowed from obj. api_get_string without len
 * refuses a string holding a NUL byte (400 invalid_value): its caller reads a C string. */
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

/* ---- what http needs of the service's configuration ---- */

/* Drawn per request from req->cfg (opaque here) by the function the handlers layer installs
 * (http_conf_of); with none installed (unit tests of a lower layer), the defaults below. */
struct http_conf {
	uint64_t max_body_bytes;  /* JSON bodies (default 1 MiB) */
	const char *state_dir;	  /* admission slots live in state_dir/admit (NULL: no caps) */
	uint32_t runs_per_client; /* concurrent runs per client; past it: 429. 0: no cap */
	uint32_t runs_machine;	  /* runs in flight on the machine; past it: 503 busy. 0: no cap */
	uint32_t runs_share_pct;  /* most of the machine's runs one client may hold, in percent */
	uint32_t runs_reserve;	  /* machine slots only a client with no run in flight may take */
	uint32_t pool_workers;	  /* FastCGI workers of the pool; 0: unknown (caps the machine's) */
	uint32_t queue_wait_ms;
	uint64_t run_wall_ms; /* default wall limit of a run: its deadline until it says its own */
};
extern void (*http_conf_of)(const struct config *cfg, struct http_conf *out);
/* The http_conf of req into out (defaults when nothing is installed). */
void http_conf(const struct api_req *req, struct http_conf *out);

#endif
