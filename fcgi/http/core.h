/* core.h: http/ internals shared by main.c, routes.c, admit.c, log.c, the handlers and the unit
 * tests: the route table type, matching, admission, logging. */
#ifndef SBX_FCGI_CORE_H
#define SBX_FCGI_CORE_H

#include "api.h"

#define SBX_VERSION "0.1.0"

/* Strict JSON input: nesting depth and the largest JSON body accepted whatever the config says. */
#define API_JSON_MAX_DEPTH 32

enum route_flags {
	ROUTE_AUTH = 1u << 0,	   /* needs a client name from nginx (REMOTE_USER) */
	ROUTE_JSON = 1u << 1,	   /* whole body read into req->body (bounded by max_body_bytes) */
	ROUTE_STREAM_IN = 1u << 2, /* raw body: the handler reads it through req->read_body */
	ROUTE_RUNS = 1u << 3,	   /* runs code: admission control (per-client and machine caps) */
	ROUTE_SEED = 1u << 4,	   /* a seed route: errors also carry FastAPI's "detail" */
};

struct route {
	const char *method;
	const char *pattern; /* literal segments, "{id}" (one segment), "{path...}" (the rest) */
	api_handler handler;
	unsigned flags;
	const char *summary; /* one line, for the OpenAPI document */
};

/* The table route_find searches: installed by the handlers layer (handlers/route_table.c). */
void route_install(const struct route *table, size_t count);

/* Path captures of a match, decoded into buf (owned by the caller, which sizes it at least as
 * large as the raw path + 2). */
struct route_match {
	const char *params[API_MAX_PARAMS];
	char allow[64]; /* methods of the pattern that did match, for 405's Allow header */
};

/* Find the route for method and the raw (still percent-encoded, no query) path. Returns the
 * borrowed route, or NULL with resp filled: 404 no route, 405 (+Allow) wrong method, 400 for a
 * malformed encoding or an encoded NUL. buf receives the decoded captures (buflen >= strlen+2). */
const struct route *route_find(const char *method, const char *raw_path, struct route_match *m,
			       char *buf, size_t buflen, struct api_resp *resp);

/* Percent-decode raw_path into out (at least strlen(raw_path) + 1 bytes); "" when malformed. */
void route_decode_path(const char *raw_path, char *out);
/* The value of one hex digit, or -1: for every percent-decoder (paths, query strings). Inline,
 * so modules linked without routes.o (the session unit tests) can use it. */
static inline int route_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Everything after the match: auth, admission control, then the handler. req->params must be
 * set from the match; for ROUTE_JSON routes req->body is already read. */
void route_call(const struct route *rt, const struct api_req *req, struct api_resp *resp);

/* route_find + route_call for requests whose body is already in req (unit tests, main). Sets
 * *rt_out to the matched route or NULL. req->params and req->path are overwritten; the decoded
 * captures live in buf. */
void route_serve(struct api_req *req, const char *raw_path, char *buf, size_t buflen,
		 struct api_resp *resp, const struct route **rt_out);

/* Work that can wait until the response is on its way (removing a scratch directory): main.c
 * runs it after FCGX_Finish_r(), so the client does not wait for it. Without main's loop (unit
 * tests) route_call() runs it before returning. One pending job; a second one runs at once. ctx
 * is owned by fn, which must free it. */
void route_defer(void (*fn)(void *ctx), void *ctx);
void route_run_deferred(void);
extern bool route_defer_enabled;

/* Admission control for runs (admit.c). Holds slots until admit_release(). Returns 0, -EUSERS
 * (the client has runs_per_client runs) or -EBUSY (the machine has runs_machine). */
struct admit {
	int client_fd;
	int machine_fd;
	int deadline_fd;       /* the run's deadline name (admit_deadline), or -1 */
	uint32_t slot;	       /* index of the client's slot held */
	uint32_t per_client;   /* the client's cap in force */
	const char *state_dir; /* borrowed from the config */
	const char *client;    /* borrowed from the request */
};
int admit_acquire(const struct http_conf *hc, const char *client, struct admit *a);
/* How a refused admission is answered (installed by the handlers, whose error table chooses the
 * status): err is -EUSERS (the client's cap) or -EBUSY (the machine's). Without one: 503. */
extern void (*route_refused)(struct api_resp *resp, int err, const struct http_conf *hc);
void admit_release(struct admit *a);
/* Say that the admitted run a may last wall_ms more from now (see admit.c: deadlines). */
void admit_deadline(struct admit *a, uint64_t wall_ms);
/* The client's other runs in flight right now (a's own slot not counted). */
uint32_t admit_in_flight(const struct admit *a);
/* Seconds until the first of client's runs in flight must have ended (at least 1): the
 * Retry-After of a 429 too_many_runs. Reads /proc/net/unix: for the refused path only. */
uint32_t admit_retry_after_s(const struct http_conf *hc, const char *client);
/* The run of the request being served may last wall_ms more (run.c calls it before each sandbox
 * run); nothing when the route does not admit runs. */
void route_run_deadline(uint64_t wall_ms);
/* A request about to hold its worker only to wait (a long-poll): at most per_client such waits
 * of the client and pool of all clients at once (0: no cap). 0 with fds to give back to
 * admit_wait_end() when the wait is over; -EUSERS (the client's cap), -EBUSY (the pool's) or
 * -errno, nothing held. */
int admit_wait(const char *state_dir, const char *client, uint32_t per_client, uint32_t pool,
	       int fds[2]);
void admit_wait_end(int fds[2]);
/* The caps in force: the config's, bounded by the pool's size (see admit.c). */
struct admit_caps {
	uint32_t machine;    /* runs at once, all clients; 0: no cap */
	uint32_t reserve;    /* of those, kept for clients with no run in flight */
	uint32_t per_client; /* runs at once, one client */
};
void admit_caps(const struct http_conf *hc, struct admit_caps *c);
/* "sbx-admit/<hash of state_dir>/": the abstract socket names of this stack's slots begin with
 * it; then "c/<client>/<i>", "m/#<hash>/<i>" or "r/#<hash>/<i>". */
int admit_prefix(const char *state_dir, char *buf, size_t len);

/* One key=value line per request to stderr (log.c). Never the token, code or output. */
struct log_fields {
	const char *request_id;
	const char *client;
	const char *method;
	const char *route; /* the matched pattern, or the raw path when no route matched */
	int status;
	double ms;
	uint64_t in_bytes;
	uint64_t out_bytes;
	const char *error_code;
	double sandbox_ms; /* time spent waiting for the broker (run.c), 0 when nothing ran */
	unsigned runs;
};
void log_request(const struct log_fields *f);
/* Start-up and internal events: "event=... " plus a printf-formatted tail. */
void log_event(const char *event, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Base64 of len bytes (json.c). Caller owns the result. */
struct json_object *api_base64_string(const unsigned char *buf, size_t len);
/* The value (0-63) of one base64 digit, standard or URL alphabet alike; -1 for any other
 * character, '=' included (json.c). */
int api_base64_value(unsigned char c);
/* Strict base64 (see json.c): 0 with *out (caller frees) and *outlen, or -1 with why filled (a
 * phrase that fits after "is not base64: ") and nothing to free. */
int api_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen, char *why,
		      size_t whylen);

#endif
