/* mcp_route.c: how an MCP tool calls the service's own routes: a request built in memory (path,
 * method, JSON or raw body) and passed through the route table as the caller's client, so every
 * check of the HTTP API applies unchanged. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

const char *mcp_header(const struct api_req *req, const char *name)
{
	size_t n = strlen(name);
	char **e;

	for (e = req->env; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

struct mem_body {
	const char *p;
	size_t left;
};

static ssize_t mem_read(void *ctx, char *buf, size_t len)
{
	struct mem_body *m = ctx;

	if (len > m->left)
		len = m->left;
	memcpy(buf, m->p, len);
	m->p += len;
	m->left -= len;
	return (ssize_t)len;
}

/* Append s percent-encoded to out (at least 3 * strlen(s) + 1 free); '/' kept when keep_slash. */
char *mcp_pct_append(char *out, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c) || (keep_slash && c == '/')) {
			*out++ = (char)c;
		} else {
			*out++ = '%';
			*out++ = hex[c >> 4];
			*out++ = hex[c & 15];
		}
	}
	*out = '\0';
	return out;
}

/* A streamed answer (NDJSON) captured in memory. Only the end event is kept: it is the whole
 * usual response; output events are dropped as they pass (their bytes are in it too). */
#define MCP_END_PREFIX "{\"type\":\"end\""

struct capture {
	char *line; /* the line being received, while it may be the end event */
	size_t len, cap;
	bool skip; /* the current line is not the end event */
	char *end; /* the end event, once complete */
	bool oom;
};

static int cap_begin(void *ctx, int status, const char *content_type, const char *headers)
{
	(void)ctx, (void)status, (void)content_type, (void)headers;
	return 0;
}

static int cap_write(void *ctx, const char *buf, size_t len)
{
	struct capture *c = ctx;
	const size_t plen = sizeof(MCP_END_PREFIX) - 1;

	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		if (!c->skip && !c->oom) {
			if (c->len + n + 1 > c->cap) {
				size_t want = (c->len + n + 1) * 2;
				char *p = realloc(c->line, want);

				if (!p) {
					c->oom = true;
				} else {
					c->line = p;
					c->cap = want;
				}
			}
			if (!c->oom) {
				memcpy(c->line + c->len, buf, n);
				c->len += n;
				c->line[c->len] = '\0';
				if (c->len >= plen && strncmp(c->line, MCP_END_PREFIX, plen) != 0)
					c->skip = true;
			}
		}
		if (nl) {
			if (!c->skip && !c->oom && c->len >= plen) {
				free(c->end);
				c->end = c->line;
				c->line = NULL;
				c->cap = 0;
			}
			c->len = 0;
			c->skip = false;
			n++;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* The route call itself; out, when given, lets the route stream its answer there. */
static void call_route_out(const struct api_req *outer, const char *method, const char *id,
			   const char *tail, const char *path, const char *body, size_t body_len,
			   const struct api_out *out_to, struct api_resp *resp)
{
	struct api_req r = *outer;
	struct mem_body mb = {body, body_len};
	const struct route *rt = NULL;
	size_t need = 32 + (id ? 3 * strlen(id) : 0) + strlen(tail) + (path ? 3 * strlen(path) : 0);
	char *raw = malloc(need), *buf = malloc(2 * need + 16), *o;

	if (!raw || !buf) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory.");
		goto out;
	}
	o = stpcpy(raw, id ? "/v1/sessions/" : "");
	if (id)
		o = mcp_pct_append(o, id, false);
	o = stpcpy(o, tail);
	if (path)
		mcp_pct_append(o, path, true);
	r.method = method;
	r.query = "";
	r.content_type = "application/json";
	r.accept = "application/json";
	r.body = body;
	r.body_len = body_len;
	r.read_body = mem_read;
	r.read_ctx = &mb;
	r.body_total = (int64_t)body_len;
	r.env = NULL;
	r.out = out_to;
	route_serve(&r, raw, buf, 2 * need + 16, resp, &rt);
out:
	free(raw);
	free(buf);
}

void mcp_call_route(const struct api_req *outer, const char *method, const char *id,
		    const char *tail, const char *path, const char *body, size_t body_len,
		    struct api_resp *resp)
{
	/* A tool's answer is one JSON-RPC result: by default the route it calls never streams. */
	call_route_out(outer, method, id, tail, path, body, body_len, NULL, resp);
}

void mcp_call_run(const struct api_req *outer, const char *id, const char *tail,
		  struct json_object *body, struct api_resp *resp)
{
	struct capture c = {0};
	struct api_out out = {cap_begin, cap_write, &c};
	struct json_object *end = NULL, *st = NULL;
	size_t len = 0;
	const char *text;

	json_object_object_add(body, "stream", json_object_new_boolean(true));
	text = json_object_to_json_string_length(body, JSON_C_TO_STRING_PLAIN, &len);
	call_route_out(outer, "POST", id, tail, NULL, text, len, &out, resp);
	if (!resp->sent)
		goto out; /* refused before it started: an ordinary answer */
	resp->sent = false;
	end = c.end ? json_tokener_parse(c.end) : NULL;
	if (!end || !json_object_is_type(end, json_type_object)) {
		api_error(resp, 500, "internal_error", NULL, "The run's answer ended early.");
		goto out;
	}
	resp->status =
	    json_object_object_get_ex(end, "http_status", &st) ? json_object_get_int(st) : 200;
	json_object_object_del(end, "type");
	json_object_object_del(end, "http_status");
	json_object_put(resp->json);
	resp->json = end;
	end = NULL;
out:
	json_object_put(end);
	free(c.line);
	free(c.end);
}

void mcp_call_json(const struct api_req *outer, const char *method, const char *id,
		   const char *tail, struct json_object *body, struct api_resp *resp)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(body, JSON_C_TO_STRING_PLAIN, &len);

	mcp_call_route(outer, method, id, tail, NULL, text, len, resp);
}
