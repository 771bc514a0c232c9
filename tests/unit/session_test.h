/* session_test.h: helpers for the session unit tests: a temp state dir, hand-built requests,
 * handler calls and response checks, without sockets. */
#ifndef SBX_SESSION_TEST_H
#define SBX_SESSION_TEST_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../fcgi/handlers/handlers.h"
#include "../lib/tap.h"

static struct config t_cfg;
static char t_state[256];

static void t_setup(void)
{
	snprintf(t_state, sizeof(t_state), "/tmp/sbx-sess-test-XXXXXX");
	if (!mkdtemp(t_state)) {
		printf("Bail out! mkdtemp failed\n");
		exit(1);
	}
	memset(&t_cfg, 0, sizeof(t_cfg));
	t_cfg.state_dir = t_state;
	t_cfg.session_ttl_s = 3600;
	t_cfg.session_max_lifetime_s = 86400;
	t_cfg.session_quota_bytes = 1u << 20;
	t_cfg.sessions_per_client = 5;
	t_cfg.max_body_bytes = 1u << 20;
}

static void t_teardown(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t_state);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", t_state);
}

/* A memory body for raw (streamed) routes; fail_at >= 0 makes the read fail there. */
struct t_body {
	const char *buf;
	size_t len, off;
	long fail_at;
};

static ssize_t t_read(void *ctx, char *buf, size_t len)
{
	struct t_body *b = ctx;
	size_t n = b->len - b->off < len ? b->len - b->off : len;

	if (b->fail_at >= 0 && b->off + n > (size_t)b->fail_at) {
		if (b->off >= (size_t)b->fail_at)
			return -1;
		n = (size_t)b->fail_at - b->off;
	}
	memcpy(buf, b->buf + b->off, n);
	b->off += n;
	return (ssize_t)n;
}

static void t_req(struct api_req *r, const char *client, const char *id, const char *path,
		  const char *body)
{
	memset(r, 0, sizeof(*r));
	r->method = "POST";
	r->path = "/test";
	r->query = "";
	r->client = client;
	r->request_id = "test";
	r->content_type = "application/json";
	r->accept = "";
	r->body = body;
	r->body_len = body ? strlen(body) : 0;
	r->body_total = -1;
	r->params[0] = id;
	r->params[1] = path;
	r->cfg = &t_cfg;
}

/* Call h as client on id/path with a JSON body (may be NULL). Returns the status; resp is
 * reset first and owned by the caller. */
static int t_call(api_handler h, const char *client, const char *id, const char *path,
		  const char *body, struct api_resp *resp)
{
	struct api_req r;

	api_resp_free(resp);
	api_resp_init(resp);
	t_req(&r, client, id, path, body);
	h(&r, resp);
	return resp->status;
}

/* PUT raw bytes through the streaming reader. */
static int t_put(const char *client, const char *id, const char *path, const char *data, size_t len,
		 struct api_resp *resp)
{
	struct t_body b = {data, len, 0, -1};
	struct api_req r;

	api_resp_free(resp);
	api_resp_init(resp);
	t_req(&r, client, id, path, NULL);
	r.method = "PUT";
	r.read_body = t_read;
	r.read_ctx = &b;
	r.body_total = (int64_t)len;
	h_file_put(&r, resp);
	return resp->status;
}

/* GET a file; its contents into buf (NUL-terminated), returns the status. */
static int t_get(const char *client, const char *id, const char *path, char *buf, size_t buflen,
		 struct api_resp *resp)
{
	int st = t_call(h_file_get, client, id, path, NULL, resp);

	buf[0] = '\0';
	if (st == 200 && resp->file_fd >= 0) {
		ssize_t n = pread(resp->file_fd, buf, buflen - 1, 0);

		buf[n > 0 ? n : 0] = '\0';
	}
	return st;
}

/* error.code of an error envelope, or "". */
static const char *t_code(const struct api_resp *resp)
{
	struct json_object *e = NULL, *c = NULL;

	if (!resp->json || !json_object_object_get_ex(resp->json, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &c))
		return "";
	return json_object_get_string(c);
}

/* A string member of the response body, or "". */
static inline const char *t_str(const struct api_resp *resp, const char *key)
{
	struct json_object *v = NULL;

	if (!resp->json || !json_object_object_get_ex(resp->json, key, &v))
		return "";
	return json_object_get_string(v);
}

/* Path of session id of client on disk (the files/ root when files is true). */
static void t_disk(char *out, size_t outlen, const char *client, const char *id, bool files)
{
	snprintf(out, outlen, "%s/sessions/u-%s/%s%s", t_state, client, id, files ? "/files" : "");
}

/* Create a /v1 session for client; id into out (37+ bytes). Returns the status. */
static int t_new_session(const char *client, char *out, struct api_resp *resp)
{
	int st = t_call(h_sessions_create, client, NULL, NULL, NULL, resp);

	snprintf(out, 64, "%s", t_str(resp, "id"));
	return st;
}

/* Entries of a directory whose name starts with prefix (to find leftovers). */
static inline int t_count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

#endif
