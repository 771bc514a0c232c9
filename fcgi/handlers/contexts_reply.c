/* contexts_reply.c: what a context's kernel sends, turned into the API's JSON (API.md,
 * "Contexts"): the reply to a cell, and in a streamed cell ("stream": true) the display lines
 * sent while it runs, as "result" events. The kernel runs inside the sandbox, with the user's
 * code in its process: everything it sends is parsed with a depth limit and every member is
 * checked (types, sizes) before any of it reaches the client; display data past
 * contexts.results_bytes (or past CTX_MAX_RESULTS items) is dropped and flagged, streamed or not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contexts.h"

#define CTX_MAX_RESULTS 64	/* display items of one cell */
#define CTX_MAX_TRACEBACK 200	/* traceback lines kept */
#define CTX_MAX_TEXT (1u << 20) /* one string of the reply (a traceback line, a name), bytes */
#define CTX_REPLY_DEPTH 32	/* JSON nesting of a reply (a result's "json" value) */

/* ---- the kernel's reply: untrusted, checked member by member ---- */

/* One JSON object of the kernel whose "op" is op, or NULL. */
static struct json_object *line_parse(const char *line, size_t len, const char *op)
{
	struct json_tokener *tok;
	struct json_object *o = NULL, *v;

	if (!line || !len || len > INT32_MAX)
		return NULL;
	if (!(tok = json_tokener_new_ex(CTX_REPLY_DEPTH)))
		return NULL;
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	if (o &&
	    (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "op", &v) ||
	     !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), op))) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

struct json_object *ctx_reply_parse(const struct sbx_cell_result *res, const char *op)
{
	return line_parse(res->reply, res->reply_len, op);
}

/* A string member of o no longer than max (bytes), else NULL. */
const char *ctx_str_member(struct json_object *o, const char *key, size_t max)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) > max)
		return NULL;
	return json_object_get_string(v);
}

/* An integer member of o in [lo, hi], else dflt. */
static int64_t int_member(struct json_object *o, const char *key, int64_t lo, int64_t hi,
			  int64_t dflt)
{
	struct json_object *v;
	int64_t x;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return dflt;
	x = json_object_get_int64(v);
	return x < lo || x > hi ? dflt : x;
}

/* True when s is base64 (standard alphabet, '=' padding only at the end). */
static bool is_base64(const char *s)
{
	size_t n = strlen(s), pad = 0;

	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	if (n % 4)
		return false;
	for (size_t i = 0; i < n - pad; i++)
		if (api_base64_value((unsigned char)s[i]) < 0 || s[i] == '-' || s[i] == '_')
			return false;
	return true;
}

/* A string member copied (as valid UTF-8) into dst when present and within budget ("png" only
 * when it is base64). */
static bool copy_str(struct json_object *src, struct json_object *dst, const char *key,
		     uint64_t *budget)
{
	const char *s = ctx_str_member(src, key, *budget);

	if (!s || (!strcmp(key, "png") && !is_base64(s)))
		return false;
	*budget -= strlen(s);
	json_object_object_add(dst, key, api_utf8_string(s, strlen(s)));
	return true;
}

/* One display item of the kernel as the API shows it, within *budget bytes (what it takes is
 * taken off); *cut when something of it was dropped. NULL when r is not an object. */
static struct json_object *result_json(struct json_object *r, uint64_t *budget, bool *cut)
{
	static const char *const keys[] = {"text", "png", "svg", "html"};
	struct json_object *o, *v;

	if (!json_object_is_type(r, json_type_object))
		return NULL;
	o = json_object_new_object();
	json_object_object_add(
	    o, "is_main_result",
	    json_object_new_boolean(json_object_object_get_ex(r, "is_main_result", &v) &&
				    json_object_is_type(v, json_type_boolean) &&
				    json_object_get_boolean(v)));
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (json_object_object_get_ex(r, keys[k], NULL) && !copy_str(r, o, keys[k], budget))
			*cut = true;
	if (json_object_object_get_ex(r, "json", &v)) {
		size_t len = 0;
		const char *txt =
		    json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN, &len);
		struct json_object *copy = txt ? json_tokener_parse(txt) : NULL;

		if (len <= *budget && (copy || !strcmp(txt ? txt : "", "null"))) {
			*budget -= len;
			json_object_object_add(o, "json", copy);
		} else {
			json_object_put(copy);
			*cut = true;
		}
	}
	return o;
}

/* The results of an execute reply appended to arr (holding the ones streamed before), at most
 * CTX_MAX_RESULTS in all, within *budget bytes; *cut when something was dropped. */
static void results_json(struct json_object *reply, struct json_object *arr, uint64_t *budget,
			 bool *cut)
{
	struct json_object *in;
	size_t n;

	if (!reply || !json_object_object_get_ex(reply, "results", &in) ||
	    !json_object_is_type(in, json_type_array))
		return;
	n = json_object_array_length(in);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o;

		if (json_object_array_length(arr) >= CTX_MAX_RESULTS) {
			*cut = true;
			break;
		}
		if ((o = result_json(json_object_array_get_idx(in, i), budget, cut)))
			json_object_array_add(arr, o);
	}
}

/* The error member of an execute reply: {name, value, traceback[]} or NULL. */
struct json_object *ctx_error_json(struct json_object *reply)
{
	struct json_object *e, *tb, *o, *lines;
	const char *name, *value;
	size_t n;

	if (!reply || !json_object_object_get_ex(reply, "error", &e) ||
	    !json_object_is_type(e, json_type_object))
		return NULL;
	name = ctx_str_member(e, "name", 256);
	value = ctx_str_member(e, "value", CTX_MAX_TEXT);
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name ? name : "Error"));
	json_object_object_add(o, "value",
			       api_utf8_string(value ? value : "", value ? strlen(value) : 0));
	lines = json_object_new_array();
	if (json_object_object_get_ex(e, "traceback", &tb) &&
	    json_object_is_type(tb, json_type_array)) {
		n = json_object_array_length(tb);
		for (size_t i = 0; i < n && i < CTX_MAX_TRACEBACK; i++) {
			struct json_object *l = json_object_array_get_idx(tb, i);

			if (json_object_is_type(l, json_type_string) &&
			    (size_t)json_object_get_string_len(l) <= CTX_MAX_TEXT)
				json_object_array_add(
				    lines, api_utf8_string(json_object_get_string(l),
							   strlen(json_object_get_string(l))));
		}
	}
	json_object_object_add(o, "traceback", lines);
	return o;
}

struct json_object *ctx_cell_json(const struct api_req *req, const struct sbx_cell_result *res,
				  bool lost, bool base64, struct ctx_live *lv)
{
	struct json_object *reply = ctx_reply_parse(res, "execute"), *o, *results;
	struct sbx_result r;
	int64_t count;
	uint64_t budget = lv ? lv->budget : req->cfg->ctx_results_bytes;
	bool cut = lv ? lv->cut : false;

	memset(&r, 0, sizeof(r));
	r.status = res->status;
	r.limit = res->limit;
	r.out = res->out ? res->out : "";
	r.out_len = res->out ? res->out_len : 0;
	r.out_truncated = res->out_truncated;
	r.err = res->err ? res->err : "";
	r.err_len = res->err ? res->err_len : 0;
	r.err_truncated = res->err_truncated;
	r.wall_ms = res->wall_ms;
	r.cpu_ms = res->cpu_ms;
	r.memory_kb = res->memory_kb;
	r.exit_code = (int)int_member(reply, "exit_code", -255, 255, res->status == SBX_OK ? 0 : 1);
	o = run_result_json(&r, base64);
	count = int_member(reply, "execution_count", 0, INT32_MAX, -1);
	json_object_object_add(o, "execution_count",
			       count >= 0 ? json_object_new_int64(count) : NULL);
	/* A streamed cell's results went out as they came: they come first, as sent. */
	results = lv ? json_object_get(lv->results) : json_object_new_array();
	results_json(reply, results, &budget, &cut);
	json_object_object_add(o, "results", results);
	if (cut)
		json_object_object_add(o, "results_truncated", json_object_new_boolean(true));
	json_object_object_add(o, "error", ctx_error_json(reply));
	json_object_object_add(o, "state", json_object_new_string(lost ? "lost" : "kept"));
	if (lost && res->message[0])
		json_object_object_add(
		    o, "message",
		    api_utf8_string(res->message, strnlen(res->message, sizeof(res->message))));
	json_object_put(reply);
	return o;
}

/* ---- a streamed cell ---- */

void ctx_live_init(struct ctx_live *lv, const struct api_req *req)
{
	memset(lv, 0, sizeof(*lv));
	lv->results = json_object_new_array();
	lv->budget = req->cfg->ctx_results_bytes;
}

void ctx_live_free(struct ctx_live *lv)
{
	json_object_put(lv->results);
	lv->results = NULL;
}

/* One display line: checked as a reply's result is, kept for the end event, sent as a "result"
 * event. 0, or -1 once the client is gone. */
static int live_result(struct ctx_live *lv, const char *line, size_t len)
{
	struct json_object *in = line_parse(line, len, "display"), *r = NULL, *o, *ev;
	int rc = 0;

	if (in)
		json_object_object_get_ex(in, "result", &r);
	if (json_object_array_length(lv->results) >= CTX_MAX_RESULTS) {
		lv->cut = true;
	} else if ((o = result_json(r, &lv->budget, &lv->cut))) {
		json_object_array_add(lv->results, o);
		ev = json_object_new_object();
		json_object_object_add(ev, "type", json_object_new_string("result"));
		json_object_object_foreach(o, k, v)
		    json_object_object_add(ev, k, json_object_get(v));
		rc = api_stream_event(lv->rs.req, lv->rs.resp, ev);
	}
	json_object_put(in);
	return rc < 0 ? -1 : 0;
}

int ctx_live_output(void *arg, int stream, const char *data, size_t len)
{
	struct ctx_live *lv = arg;

	struct timespec t;

	if (stream != SBX_CTX_STREAM_RESULT)
		return run_stream_output(&lv->rs, stream, data, len);
	if (live_result(lv, data, len) < 0)
		return -1; /* the client is gone */
	/* an event went out: no keepalive is due for a while */
	clock_gettime(CLOCK_MONOTONIC, &t);
	lv->rs.last_ms = (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
	return 0;
}
