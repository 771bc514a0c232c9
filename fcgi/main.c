/* main.c: the FastCGI worker: load the config, accept requests on fd 0 (spawn-fcgi hands us the
 * listening socket there), turn each into a struct api_req, route it, write the response.
 *
 * Theory of operation. One request at a time per worker process; the pool gives concurrency.
 * Everything a request allocates hangs off struct served and is freed in serve_free(), the only
 * place, after FCGX_Finish_r() would otherwise invalidate the FCGX_GetParam() strings anyway.
 * Handlers never see FCGX: they get the struct, and a read_body callback on stream-in routes. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "config.h"
#include "handlers/handlers.h"
#include "handlers/seed_compat.h"
#include "http/core.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>

/* A sanitized build's leak check at the end: workers never leave their accept loop by
 * themselves (multiwatch stops them with SIGTERM, while they wait in accept), so exit() and its
 * automatic check never run. The harness fails a test whose logs hold a sanitizer report. */
static void leak_check_and_exit(int sig)
{
	(void)sig;
	__lsan_do_leak_check(); /* a leak: the report, then exit code 23 */
	_exit(0);
}
#endif

#define MAIN_MAX_PATH 8192
#define MAIN_CHUNK (64u << 10)

static struct config g_cfg;

struct served {
	struct api_req req;
	struct api_resp resp;
	const struct route *rt;
	char *path_buf;
	char *body;
	char *raw_path;
	char rid[40];
	uint64_t in_bytes, out_bytes;
	bool head; /* HEAD: headers only */
	FCGX_Request *r;
	struct api_out out; /* streamed answers */
};

/* The reason phrase of a status: a static string. */
static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 421:
		return "Misdirected Request";
	case 422:
		return "Unprocessable Content";
	case 429:
		return "Too Many Requests";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 507:
		return "Insufficient Storage";
	}
	return "Status";
}

/* A FastCGI param, "" when absent: borrowed, dies at FCGX_Finish_r(). */
static const char *param(FCGX_Request *r, const char *name)
{
	const char *v = FCGX_GetParam(name, r->envp);

	return v ? v : "";
}

static ssize_t fcgx_read(void *ctx, char *buf, size_t len)
{
	int n;

	if (len > INT32_MAX)
		len = INT32_MAX;
	n = FCGX_GetStr(buf, (int)len, (FCGX_Stream *)ctx);
	if (n < 0 || FCGX_GetError((FCGX_Stream *)ctx))
		return -1;
	return n;
}

/* CONTENT_LENGTH as a number; -1 when absent, -2 when malformed. */
static int64_t content_length(const char *s)
{
	int64_t v = 0;

	if (!s[0])
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
			return -2;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* Read the whole JSON body (bounded by max_body_bytes) into s->body. 0, or -1 with resp filled. */
static int read_json_body(FCGX_Request *r, struct served *s)
{
	int64_t len = content_length(param(r, "CONTENT_LENGTH"));
	int64_t got = 0;

	if (len == -2) {
		api_error(&s->resp, 400, "bad_request", NULL, "Content-Length is malformed.");
		return -1;
	}
	if (len <= 0)
		return 0;
	if ((uint64_t)len > g_cfg.max_body_bytes) {
		api_error(&s->resp, 413, "body_too_large", NULL,
			  "The request body is larger than %llu bytes.",
			  (unsigned long long)g_cfg.max_body_bytes);
		return -1;
	}
	s->body = malloc((size_t)len + 1);
	if (!s->body) {
		api_error(&s->resp, 500, "internal_error", NULL,
			  "Out of memory for the request body.");
		return -1;
	}
	while (got < len) {
		int n = FCGX_GetStr(s->body + got, (int)(len - got), r->in);

		if (n <= 0)
			break;
		got += n;
	}
	s->in_bytes = (uint64_t)got;
	if (got != len) {
		api_error(&s->resp, 400, "bad_request", NULL, "The request body ended early.");
		return -1;
	}
	s->body[len] = '\0';
	s->req.body = s->body;
	s->req.body_len = (size_t)len;
	return 0;
}

static void make_request_id(struct served *s, const char *from_nginx)
{
	unsigned char b[8] = {0};
	size_t i;

	if (from_nginx[0] && strlen(from_nginx) < sizeof(s->rid) &&
	    strspn(from_nginx, "0123456789abcdefABCDEF-") == strlen(from_nginx)) {
		strcpy(s->rid, from_nginx);
		return;
	}
	if (getrandom(b, sizeof(b), GRND_NONBLOCK) < 0)
		memset(b, 0, sizeof(b));
	for (i = 0; i < sizeof(b); i++)
		snprintf(s->rid + 2 * i, 3, "%02x", b[i]);
}

/* libfcgi's own printf lacks C99 length modifiers: headers are formatted here, then written. */
static void put_headers(FCGX_Request *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put_headers(FCGX_Request *r, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		FCGX_PutStr(buf, n < (int)sizeof(buf) ? n : (int)sizeof(buf) - 1, r->out);
}

/* Streamed answers: headers, then each write is flushed to nginx at once (which passes it on:
 * X-Accel-Buffering: no), together with what was held before it (resp.hold: bytes that go out
 * with the next flush, or with the request's end in one write with FCGI_END_REQUEST). A write
 * nginx no longer takes (the client left) fails for good. */
static int out_flush(struct served *s)
{
	if (s->resp.hold)
		return FCGX_GetError(s->r->out) ? -1 : 0;
	return FCGX_FFlush(s->r->out) < 0 || FCGX_GetError(s->r->out) ? -1 : 0;
}

static int out_begin(void *ctx, int status, const char *content_type, const char *headers)
{
	struct served *s = ctx;

	put_headers(s->r, "Status: %d %s\r\nContent-Type: %s\r\n%s\r\n", status, reason(status),
		    content_type, headers);
	return out_flush(s);
}

static int out_write(void *ctx, const char *buf, size_t len)
{
	struct served *s = ctx;

	if (s->head)
		return 0;
	if (len > INT32_MAX || FCGX_PutStr(buf, (int)len, s->r->out) != (int)len ||
	    out_flush(s) < 0)
		return -1;
	s->out_bytes += len;
	return 0;
}

static void write_response(FCGX_Request *r, struct served *s)
{
	struct api_resp *resp = &s->resp;
	const char *body = NULL;
	size_t blen = 0;

	if (resp->sent)
		return;
	if (resp->status == 0)
		api_error(resp, 500, "internal_error", NULL, "No response was produced.");
	if (resp->file_fd >= 0) {
		char *chunk = malloc(MAIN_CHUNK);
		off_t left = resp->file_len;

		put_headers(r,
			    "Status: %d %s\r\nContent-Type: %s\r\nContent-Length: %lld\r\n%s\r\n",
			    resp->status, reason(resp->status),
			    resp->content_type ? resp->content_type : "application/octet-stream",
			    (long long)resp->file_len, resp->headers);
		while (chunk && left > 0 && !s->head) {
			ssize_t n = read(resp->file_fd, chunk,
					 left < MAIN_CHUNK ? (size_t)left : MAIN_CHUNK);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || FCGX_PutStr(chunk, (int)n, r->out) != n)
				break;
			left -= n;
			s->out_bytes += (uint64_t)n;
		}
		free(chunk);
		return;
	}
	if (resp->json && resp->status != 204)
		body = json_object_to_json_string_length(
		    resp->json, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &blen);
	/* nginx adds Cache-Control, X-Request-Id and the security headers to every answer. */
	if (body)
		put_headers(r,
			    "Status: %d %s\r\nContent-Type: application/json\r\nContent-Length: "
			    "%zu\r\n%s\r\n",
			    resp->status, reason(resp->status), blen, resp->headers);
	else
		put_headers(r, "Status: %d %s\r\n%s\r\n", resp->status, reason(resp->status),
			    resp->headers);
	if (body && !s->head) {
		FCGX_PutStr(body, (int)blen, r->out);
		s->out_bytes = blen;
	}
}

static void serve(FCGX_Request *r)
{
	struct served s;
	struct timespec t0, t1;
	const char *uri, *q;
	size_t plen;

	memset(&s, 0, sizeof(s));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_sandbox_ms = 0;
	run_count = 0;
	api_resp_init(&s.resp);
	make_request_id(&s, param(r, "REQUEST_ID"));
	s.req.method = param(r, "REQUEST_METHOD");
	s.head = strcmp(s.req.method, "HEAD") == 0;
	s.req.client = param(r, "REMOTE_USER");
	s.req.request_id = s.rid;
	s.req.content_type = param(r, "CONTENT_TYPE");
	s.req.accept = param(r, "HTTP_ACCEPT");
	s.req.query = param(r, "QUERY_STRING");
	s.req.cfg = &g_cfg;
	s.req.env = r->envp;
	s.req.body_total = -1;
	s.r = r;
	s.out = (struct api_out){out_begin, out_write, &s};
	s.req.out = &s.out;
	/* REQUEST_URI is the raw path: captures are decoded segment by segment in route_find(), so
	 * an encoded '/' cannot change which route matches. */
	uri = param(r, "REQUEST_URI");
	if (!uri[0])
		uri = param(r, "DOCUMENT_URI");
	q = strchr(uri, '?');
	plen = q ? (size_t)(q - uri) : strlen(uri);
	if (plen > MAIN_MAX_PATH) {
		api_error(&s.resp, 414, "uri_too_long", NULL, "The request path is too long.");
		goto done;
	}
	if (q && !s.req.query[0])
		s.req.query = q + 1;
	s.raw_path = strndup(uri, plen);
	s.path_buf = malloc(2 * plen + 16);
	if (!s.raw_path || !s.path_buf) {
		api_error(&s.resp, 500, "internal_error", NULL, "Out of memory.");
		goto done;
	}
	{
		struct route_match m;
		size_t half = plen + 8;

		s.rt = route_find(s.req.method, s.raw_path, &m, s.path_buf + half, half, &s.resp);
		if (!s.rt)
			goto done;
		memcpy(s.req.params, m.params, sizeof(s.req.params));
		/* The decoded path, for handlers that want it; route_find() validated the encoding.
		 */
		route_decode_path(s.raw_path, s.path_buf);
		s.req.path = s.path_buf;
	}
	if (s.rt->flags & ROUTE_JSON) {
		if (read_json_body(r, &s) < 0)
			goto done;
		/* Read to the end of the stream (the empty FCGI_STDIN record), so that the
		 * connection turns readable only when nginx closes it: a client gone mid-call
		 * (contexts). */
		while (FCGX_GetChar(r->in) != EOF)
			;
		s.req.conn_watch = true;
		s.req.conn_fd = r->ipcFd;
	} else if (s.rt->flags & ROUTE_STREAM_IN) {
		int64_t cl = content_length(param(r, "CONTENT_LENGTH"));

		if (cl == -2) {
			api_error(&s.resp, 400, "bad_request", NULL,
				  "Content-Length is malformed.");
			goto done;
		}
		s.req.read_body = fcgx_read;
		s.req.read_ctx = r->in;
		s.req.body_total = cl;
		if (cl > 0)
			s.in_bytes = (uint64_t)cl;
	}
	route_call(s.rt, &s.req, &s.resp);
done:
	if (s.rt && (s.rt->flags & ROUTE_SEED))
		seed_error_detail(&s.resp);
	api_error_request_id(&s.resp, s.rid);
	write_response(r, &s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_request(&(struct log_fields){.request_id = s.rid,
					 .client = s.req.client,
					 .method = s.req.method,
					 .route = s.rt ? s.rt->pattern : "-",
					 .status = s.resp.status,
					 .ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
					       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
					 .in_bytes = s.in_bytes,
					 .out_bytes = s.out_bytes,
					 .error_code = s.resp.error_code,
					 .sandbox_ms = run_sandbox_ms,
					 .runs = run_count});
	api_resp_free(&s.resp);
	free(s.body);
	free(s.raw_path);
	free(s.path_buf);
}

int main(void)
{
	char err[512], path[4096];
	const char *cfg_path = getenv("SBX_CONFIG");
	FCGX_Request r;
	char *sub = NULL;

	signal(SIGPIPE, SIG_IGN);
#if defined(__SANITIZE_ADDRESS__)
	signal(SIGTERM, leak_check_and_exit);
#endif
	if (!cfg_path || !cfg_path[0]) {
		snprintf(path, sizeof(path), "%s/fcgi/sbx.conf.json", config_repo_dir());
		cfg_path = path;
	}
	if (config_load(cfg_path, &g_cfg, err, sizeof(err)) < 0) {
		log_event("config_error", "path=%s detail=\"%s\"", cfg_path, err);
		return 1;
	}
	/* The start script makes these; a worker started by hand still finds them. */
	if (asprintf(&sub, "%s/sessions", g_cfg.state_dir) > 0) {
		mkdir(sub, 0700);
		free(sub);
	}
	if (asprintf(&sub, "%s/scratch", g_cfg.state_dir) > 0) {
		mkdir(sub, 0700);
		free(sub);
	}
	log_event("start", "config=%s state_dir=%s broker=%s languages=%zu", cfg_path,
		  g_cfg.state_dir, g_cfg.broker_socket, g_cfg.nlangs);
	if (FCGX_Init() != 0 || FCGX_InitRequest(&r, 0, 0) != 0) {
		log_event("fcgi_error", "detail=\"FCGX_Init failed\"");
		return 1;
	}
	route_defer_enabled = true;
	while (FCGX_Accept_r(&r) >= 0) {
		serve(&r);
		FCGX_Finish_r(&r);
		route_run_deferred();
	}
	config_free(&g_cfg);
	return 0;
}
