/* contexts.c: the context routes of API.md ("Contexts"): a long-lived sandboxed interpreter per
 * session. The broker holds the contexts (sbx_client_ctx_*); the session directory records them
 * (store/contexts.c), so a context the broker no longer has (idle eviction, a broker restart) is
 * made again on the next call, which then says state "lost" -- never silently.
 *
 * The kernel's reply comes from inside the sandbox: it is parsed with a depth limit and every
 * member is checked (types, sizes) before any of it reaches the client; display data past
 * contexts.results_bytes is dropped and flagged. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "handlers.h"

#define CTX_MAX_RESULTS 64	/* display items of one cell */
#define CTX_MAX_TRACEBACK 200	/* traceback lines kept */
#define CTX_MAX_TEXT (1u << 20) /* one string of the reply (a traceback line, a name), bytes */
#define CTX_MAX_VARIABLES 1000	/* variables listed */
#define CTX_VAR_NAME_MAX 128	/* a variable name, bytes */
#define CTX_REPLY_DEPTH 32	/* JSON nesting of a reply (a result's "json" value) */

static const char *ctx_sock(const struct api_req *req)
{
	return req->cfg->broker_socket;
}

/* The client's connection, to interrupt a cell when it goes away; -1 when it cannot be watched. */
static int ctx_cancel_fd(const struct api_req *req)
{
	return req->conn_watch ? req->conn_fd : -1;
}

static enum sbx_ctx_lang lang_of(const char *l)
{
	return !strcmp(l, "bash") ? SBX_CTX_BASH : SBX_CTX_PYTHON;
}

static int new_ctx_id(char *out)
{
	unsigned char b[STORE_CTX_ID_LEN / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

/* The language field: "python" (default when absent and dflt) or "bash"; else a 400. */
static int parse_language(struct json_object *body, bool required, const char **out,
			  struct api_resp *resp)
{
	const char *l = NULL;
	int rc = api_get_string(body, "language", required, &l, NULL, resp);

	if (rc < 0)
		return -1;
	if (rc == 1) {
		*out = "python";
		return 0;
	}
	if (strcmp(l, "python") && strcmp(l, "bash")) {
		api_error(resp, 400, "invalid_language", "language",
			  "A context's language is \"python\" or \"bash\", not \"%.64s\".", l);
		return -1;
	}
	*out = !strcmp(l, "python") ? "python" : "bash";
	return 0;
}

/* A context's life limits (memory_mb, processes) from a request's "limits": the config's defaults
 * (contexts.memory_mb), maxima as for runs; per-cell limits are refused here. 0 or -1 (400). */
static int parse_life_limits(const struct api_req *req, struct json_object *limits,
			     uint32_t *mem_mb, uint32_t *procs, struct api_resp *resp)
{
	static const char *const per_cell[] = {"wall_ms", "cpu_ms", "output_bytes", "file_size_mb"};
	struct sbx_limits l;

	if (limits && json_object_is_type(limits, json_type_object))
		for (size_t i = 0; i < sizeof(per_cell) / sizeof(per_cell[0]); i++)
			if (json_object_object_get_ex(limits, per_cell[i], NULL)) {
				api_error(resp, 400, "invalid_limit", "limits",
					  "limits.%s is a per-cell limit: give it with each "
					  "execute; a context takes memory_mb and processes.",
					  per_cell[i]);
				return -1;
			}
	if (run_parse_limits(req->cfg, NULL, limits, &l, resp) < 0)
		return -1;
	*mem_mb = (uint32_t)(req->cfg->ctx_memory_bytes >> 20);
	if (limits && json_object_object_get_ex(limits, "memory_mb", NULL))
		*mem_mb = (uint32_t)(l.memory_bytes >> 20);
	*procs = l.processes;
	return 0;
}

/* Per-cell limits (wall_ms, cpu_ms, output_bytes) from a request's "limits"; memory_mb and
 * processes are the context's (set when it is made). 0 or -1 (400). */
static int parse_cell_limits(const struct api_req *req, struct json_object *limits,
			     struct sbx_limits *out, struct api_resp *resp)
{
	static const char *const life[] = {"memory_mb", "processes", "file_size_mb"};

	if (limits && json_object_is_type(limits, json_type_object))
		for (size_t i = 0; i < sizeof(life) / sizeof(life[0]); i++)
			if (json_object_object_get_ex(limits, life[i], NULL)) {
				api_error(resp, 400, "invalid_limit", "limits",
					  "limits.%s holds for the context's whole life: give it "
					  "when creating the context (POST .../contexts).",
					  life[i]);
				return -1;
			}
	return run_parse_limits(req->cfg, NULL, limits, out, resp);
}

/* Start c in the broker (the session's files at /work). 0, or -1 with resp filled. */
static int ctx_start(const struct api_req *req, const struct session *s, const struct store_ctx *c,
		     struct api_resp *resp)
{
	const struct config *cfg = req->cfg;
	struct sbx_ctx_spec spec;
	char err[256] = "";
	int rc;

	memset(&spec, 0, sizeof(spec));
	memcpy(spec.id, c->id, sizeof(spec.id));
	snprintf(spec.owner, sizeof(spec.owner), "%s", req->client);
	spec.language = lang_of(c->language);
	spec.workdir_fd = s->root_fd;
	spec.limits = cfg->defaults;
	spec.limits.wall_ms = spec.limits.cpu_ms = 0;
	spec.limits.memory_bytes =
	    c->memory_mb ? (uint64_t)c->memory_mb << 20 : cfg->ctx_memory_bytes;
	if (c->processes)
		spec.limits.processes = c->processes;
	spec.idle_ttl_s = cfg->ctx_idle_ttl_s;
	spec.max_per_owner = cfg->ctx_per_client;
	rc = sbx_client_ctx_create(ctx_sock(req), &spec, err, sizeof(err));
	/* EEXIST: a concurrent call (another worker) made this lost context again first. */
	if (rc == 0 || rc == -EEXIST)
		return 0;
	if (rc == -EDQUOT)
		h_fail(resp, EDQUOT, H_WHY_CTX_CLIENT, cfg->ctx_per_client, NULL);
	else if (rc == -EAGAIN)
		h_fail(resp, EAGAIN, H_WHY_CTX_MACHINE, 0, NULL);
	else
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, err[0] ? err : strerror(-rc));
	return -1;
}

/* The session of params[0] and its context params[1]: 0, or -1 with a 404 filled. */
static int ctx_open(const struct api_req *req, struct session **s, struct store_ctx *c,
		    struct api_resp *resp)
{
	const char *cid = req->params[1] ? req->params[1] : "";
	int rc;

	if (!(*s = h_session_open(req, req->params[0], resp)))
		return -1;
	rc = store_ctx_id_valid(cid) ? store_ctx_find((*s)->dir_fd, cid, c) : -ENOENT;
	if (rc == 0)
		return 0;
	if (rc == -ENOENT)
		h_fail(resp, ENOENT, H_WHY_CTX_MISSING, 0, cid);
	else
		h_errno(resp, rc, NULL, "");
	session_close(*s);
	*s = NULL;
	return -1;
}

/* One kernel request on c; a context the broker lost is started again first (*lost set). 0 with
 * res filled (the caller frees it), or -1 with resp filled. */
static int ctx_call(const struct api_req *req, const struct session *s, const struct store_ctx *c,
		    const char *request, const struct sbx_limits *lim, struct sbx_cell_result *res,
		    bool *lost, struct api_resp *resp)
{
	struct sbx_cell cell = {.request = request,
				.request_len = strlen(request),
				.limits = *lim,
				.wait_ms = req->cfg->ctx_wait_ms};
	struct timespec t0, t1;
	int rc;

	*lost = false;
	memset(res, 0, sizeof(*res));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = sbx_client_ctx_call(ctx_sock(req), c->id, &cell, ctx_cancel_fd(req), res);
	if (rc == -ENOENT) {
		sbx_cell_result_free(res);
		if (ctx_start(req, s, c, resp) < 0)
			return -1;
		*lost = true;
		rc = sbx_client_ctx_call(ctx_sock(req), c->id, &cell, ctx_cancel_fd(req), res);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	run_sandbox_ms +=
	    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	run_count++;
	if (rc == 0) {
		if (res->lost)
			*lost = true;
		if (res->status != SBX_INTERNAL_ERROR)
			return 0;
	}
	if (rc == -EBUSY)
		h_fail(resp, EBUSY, H_WHY_CTX_BUSY, req->cfg->ctx_wait_ms, NULL);
	else if (rc == -ENOENT)
		h_fail(resp, ENOENT, H_WHY_CTX_MISSING, 0, c->id);
	else if (rc == -ECANCELED)
		/* The client is gone: nobody reads this answer (nginx logs 499). */
		api_error(resp, 499, "client_closed", NULL, "The client closed the connection.");
	else
		h_fail(resp, EIO, H_WHY_SANDBOX, 0,
		       res->message[0] ? res->message : (rc ? strerror(-rc) : "no detail"));
	sbx_cell_result_free(res);
	return -1;
}

/* ---- the kernel's reply: untrusted, checked member by member ---- */

static struct json_object *reply_parse(const struct sbx_cell_result *res, const char *op)
{
	struct json_tokener *tok;
	struct json_object *o = NULL, *v;

	if (!res->reply || !res->reply_len || res->reply_len > INT32_MAX)
		return NULL;
	if (!(tok = json_tokener_new_ex(CTX_REPLY_DEPTH)))
		return NULL;
	o = json_tokener_parse_ex(tok, res->reply, (int)res->reply_len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != res->reply_len) {
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

/* A string member of o no longer than max (bytes), else NULL. */
static const char *str_member(struct json_object *o, const char *key, size_t max)
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
	const char *s = str_member(src, key, *budget);

	if (!s || (!strcmp(key, "png") && !is_base64(s)))
		return false;
	*budget -= strlen(s);
	json_object_object_add(dst, key, api_utf8_string(s, strlen(s)));
	return true;
}

/* The results array of an execute reply, within budget bytes; *cut when something was dropped. */
static struct json_object *results_json(struct json_object *reply, uint64_t budget, bool *cut)
{
	static const char *const keys[] = {"text", "png", "svg", "html"};
	struct json_object *arr = json_object_new_array(), *in;
	size_t n;

	*cut = false;
	if (!reply || !json_object_object_get_ex(reply, "results", &in) ||
	    !json_object_is_type(in, json_type_array))
		return arr;
	n = json_object_array_length(in);
	if (n > CTX_MAX_RESULTS) {
		n = CTX_MAX_RESULTS;
		*cut = true;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(in, i), *o, *v;

		if (!json_object_is_type(r, json_type_object))
			continue;
		o = json_object_new_object();
		json_object_object_add(
		    o, "is_main_result",
		    json_object_new_boolean(json_object_object_get_ex(r, "is_main_result", &v) &&
					    json_object_is_type(v, json_type_boolean) &&
					    json_object_get_boolean(v)));
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (json_object_object_get_ex(r, keys[k], NULL) &&
			    !copy_str(r, o, keys[k], &budget))
				*cut = true;
		if (json_object_object_get_ex(r, "json", &v)) {
			size_t len = 0;
			const char *txt =
			    json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN, &len);
			struct json_object *copy = txt ? json_tokener_parse(txt) : NULL;

			if (len <= budget && (copy || !strcmp(txt ? txt : "", "null"))) {
				budget -= len;
				json_object_object_add(o, "json", copy);
			} else {
				json_object_put(copy);
				*cut = true;
			}
		}
		json_object_array_add(arr, o);
	}
	return arr;
}

/* The error member of an execute reply: {name, value, traceback[]} or NULL. */
static struct json_object *error_json(struct json_object *reply)
{
	struct json_object *e, *tb, *o, *lines;
	const char *name, *value;
	size_t n;

	if (!reply || !json_object_object_get_ex(reply, "error", &e) ||
	    !json_object_is_type(e, json_type_object))
		return NULL;
	name = str_member(e, "name", 256);
	value = str_member(e, "value", CTX_MAX_TEXT);
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

/* The cell result of API.md: the run result, execution_count, results, error, state. */
static struct json_object *cell_json(const struct api_req *req, const struct sbx_cell_result *res,
				     bool lost, bool base64)
{
	struct json_object *reply = reply_parse(res, "execute"), *o, *results;
	struct sbx_result r;
	int64_t count;
	bool cut = false;

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
	results = results_json(reply, req->cfg->ctx_results_bytes, &cut);
	json_object_object_add(o, "results", results);
	if (cut)
		json_object_object_add(o, "results_truncated", json_object_new_boolean(true));
	json_object_object_add(o, "error", error_json(reply));
	json_object_object_add(o, "state", json_object_new_string(lost ? "lost" : "kept"));
	if (lost && res->message[0])
		json_object_object_add(
		    o, "message",
		    api_utf8_string(res->message, strnlen(res->message, sizeof(res->message))));
	json_object_put(reply);
	return o;
}

/* ---- routes ---- */

static struct json_object *ctx_json(const struct store_ctx *c, const struct sbx_ctx_info *info)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(c->id));
	json_object_object_add(o, "language", json_object_new_string(c->language));
	h_json_time(o, "created_at", c->created_at);
	json_object_object_add(o, "default", json_object_new_boolean(c->is_default));
	json_object_object_add(o, "memory_mb", json_object_new_int64(c->memory_mb));
	if (info) {
		json_object_object_add(o, "state",
				       json_object_new_string(info->busy ? "busy" : "idle"));
		json_object_object_add(o, "execution_count",
				       json_object_new_int64(info->execution_count));
		json_object_object_add(o, "memory_kb", json_object_new_uint64(info->memory_kb));
		h_json_time(o, "last_used_at", (int64_t)(info->last_used_ms / 1000));
	} else {
		/* The broker no longer holds it: the next call makes it again (state "lost"). */
		json_object_object_add(o, "state", json_object_new_string("stopped"));
		json_object_object_add(o, "execution_count", json_object_new_int(0));
		json_object_object_add(o, "memory_kb", json_object_new_int(0));
		json_object_object_add(o, "last_used_at", NULL);
	}
	return o;
}

/* Make a context of language in s (recorded, started). 0 with *c filled, or -1 with resp. */
static int ctx_make(const struct api_req *req, struct session *s, const char *language,
		    bool is_default, uint32_t mem_mb, uint32_t procs, struct store_ctx *c,
		    struct api_resp *resp)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (new_ctx_id(c->id) < 0) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, "no random bytes for a context id");
		return -1;
	}
	snprintf(c->language, sizeof(c->language), "%s", language);
	c->created_at = now_s();
	c->is_default = is_default;
	c->memory_mb = mem_mb;
	c->processes = procs;
	if (ctx_start(req, s, c, resp) < 0)
		return -1;
	if ((rc = store_ctx_add(s, c)) == 0)
		return 0;
	(void)sbx_client_ctx_delete(ctx_sock(req), c->id);
	if (rc == -EUSERS)
		h_fail(resp, EUSERS, H_WHY_CTX_MANY, STORE_CTX_MAX, NULL);
	else if (rc == -EEXIST && is_default && store_ctx_default(s->dir_fd, language, c) == 0)
		return 0; /* a concurrent repl call made the default first: use that one */
	else
		h_errno(resp, rc, NULL, "");
	return -1;
}

/* A kernel request {"op": op, ...extra} as a string into *out (caller frees). */
static char *kernel_request(const char *op, const char *key, struct json_object *val)
{
	struct json_object *o = json_object_new_object();
	char *text;

	json_object_object_add(o, "op", json_object_new_string(op));
	if (key)
		json_object_object_add(o, key, val);
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

/* The code of a cell that moves the interpreter to /work/<cwd>. Caller frees. */
static char *chdir_code(const char *language, const char *cwd, size_t len)
{
	struct json_object *path;
	char *code = NULL, full[SESSION_PATH_MAX + 16];
	size_t o = 0;

	snprintf(full, sizeof(full), "/work/%.*s", (int)len, cwd);
	if (!strcmp(language, "python")) {
		/* A JSON string (no "\/") is a Python string literal. */
		path = json_object_new_string(full);
		if (asprintf(&code, "__import__('os').chdir(%s)",
			     json_object_to_json_string_ext(path, JSON_C_TO_STRING_NOSLASHESCAPE)) <
		    0)
			code = NULL;
		json_object_put(path);
		return code;
	}
	/* bash: single quotes, each ' as '\'' */
	if (!(code = malloc(strlen(full) * 4 + 16)))
		return NULL;
	o += (size_t)sprintf(code, "cd -- '");
	for (const char *p = full; *p; p++) {
		if (*p == '\'') {
			memcpy(code + o, "'\\''", 4);
			o += 4;
		} else {
			code[o++] = *p;
		}
	}
	memcpy(code + o, "'", 2);
	return code;
}

/* Run the chdir cell in a new context. 0, or -1 with resp filled. */
static int ctx_chdir(const struct api_req *req, const struct session *s, const struct store_ctx *c,
		     const char *cwd, size_t len, struct api_resp *resp)
{
	char *code = chdir_code(c->language, cwd, len), *rq;
	struct sbx_limits lim = req->cfg->defaults;
	struct sbx_cell_result res;
	bool lost, ok;

	if (!code) {
		h_fail(resp, ENOMEM, H_WHY_SANDBOX, 0, "out of memory");
		return -1;
	}
	rq = kernel_request("execute", "code", json_object_new_string(code));
	free(code);
	if (!rq || ctx_call(req, s, c, rq, &lim, &res, &lost, resp) < 0) {
		if (!rq)
			h_fail(resp, ENOMEM, H_WHY_SANDBOX, 0, "out of memory");
		free(rq);
		return -1;
	}
	free(rq);
	ok = res.status == SBX_OK;
	sbx_cell_result_free(&res);
	if (!ok) {
		api_error(resp, 400, "invalid_value", "cwd",
			  "The context could not change to \"%.200s\".", cwd);
		return -1;
	}
	return 0;
}

void h_contexts_create(const struct api_req *req, struct api_resp *resp)
{
	static const char *const fields[] = {"language", "cwd", "limits", NULL};
	struct json_object *body = api_body_object(req, resp), *limits = NULL, *o;
	const char *language = NULL, *cwd = NULL;
	struct session *s = NULL;
	struct store_ctx c;
	uint32_t mem = 0, procs = 0;
	size_t cwd_len = 0;

	if (!body)
		return;
	if (api_only_fields(body, fields, resp) < 0 ||
	    parse_language(body, true, &language, resp) < 0 ||
	    api_get_string(body, "cwd", false, &cwd, &cwd_len, resp) < 0 ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    parse_life_limits(req, limits, &mem, &procs, resp) < 0)
		goto out;
	if (cwd && cwd_len && fs_path_check(cwd, cwd_len) < 0) {
		h_errno(resp, EINVAL, "cwd", cwd);
		goto out;
	}
	if (!(s = h_session_open(req, req->params[0], resp)))
		goto out;
	if (cwd && cwd_len) {
		int fd = fs_open(s->root_fd, cwd, O_PATH | O_DIRECTORY, 0);

		if (fd < 0) {
			api_error(resp, 400, "invalid_value", "cwd",
				  "cwd \"%.200s\" is not a directory of this session.", cwd);
			goto out;
		}
		close(fd);
	}
	if (ctx_make(req, s, language, false, mem, procs, &c, resp) < 0)
		goto out;
	if (cwd && cwd_len && ctx_chdir(req, s, &c, cwd, cwd_len, resp) < 0) {
		(void)store_ctx_remove(s, c.id);
		(void)sbx_client_ctx_delete(ctx_sock(req), c.id);
		goto out;
	}
	o = ctx_json(&c, NULL);
	json_object_object_add(o, "state", json_object_new_string("idle"));
	json_object_object_add(o, "execution_count", json_object_new_int(cwd && cwd_len ? 1 : 0));
	api_json(resp, 201, o);
out:
	session_close(s);
	json_object_put(body);
}

void h_contexts_list(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	struct store_ctx v[STORE_CTX_MAX];
	struct sbx_ctx_info *info = NULL;
	struct json_object *arr;
	size_t n = 0, ni = 0;
	int rc;

	if (!s)
		return;
	if ((rc = store_ctx_list(s->dir_fd, v, STORE_CTX_MAX, &n)) < 0) {
		h_errno(resp, rc, NULL, "");
		goto out;
	}
	if (n && (rc = sbx_client_ctx_list(ctx_sock(req), req->client, &info, &ni)) < 0) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
		goto out;
	}
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const struct sbx_ctx_info *in = NULL;

		for (size_t k = 0; k < ni && !in; k++)
			if (!strcmp(info[k].id, v[i].id))
				in = &info[k];
		json_object_array_add(arr, ctx_json(&v[i], in));
	}
	api_json(resp, 200, arr);
out:
	free(info);
	session_close(s);
}

/* The body of execute and repl: code, limits, stream (false only), output_encoding. 0 or -1. */
static int cell_body(const struct api_req *req, struct json_object *body, bool repl,
		     const char **language, char **request, struct sbx_limits *lim, bool *base64,
		     struct api_resp *resp)
{
	static const char *const exec_fields[] = {"code", "limits", "stream", "output_encoding",
						  NULL};
	static const char *const repl_fields[] = {"code",   "language",	       "limits",
						  "stream", "output_encoding", NULL};
	struct json_object *limits = NULL;
	const char *code = NULL, *enc = NULL;
	size_t code_len = 0;
	bool stream = false;
	int rc;

	if (api_only_fields(body, repl ? repl_fields : exec_fields, resp) < 0 ||
	    api_get_string(body, "code", true, &code, &code_len, resp) < 0 ||
	    (repl && parse_language(body, false, language, resp) < 0) ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    api_get_bool(body, "stream", &stream, resp) < 0 ||
	    (rc = api_get_string(body, "output_encoding", false, &enc, NULL, resp)) < 0)
		return -1;
	if (stream) {
		api_error(resp, 400, "invalid_value", "stream",
			  "Streaming cells is not supported yet; omit \"stream\" (or false).");
		return -1;
	}
	*base64 = false;
	if (rc == 0) {
		if (strcmp(enc, "utf8") && strcmp(enc, "utf-8") && strcmp(enc, "base64")) {
			api_error(resp, 400, "invalid_value", "output_encoding",
				  "output_encoding is \"utf8\" or \"base64\".");
			return -1;
		}
		*base64 = !strcmp(enc, "base64");
	}
	if (code_len > SBX_CTX_MAX_REQUEST - 1024) {
		api_error(resp, 400, "invalid_value", "code", "code is %zu bytes; the most is %u.",
			  code_len, SBX_CTX_MAX_REQUEST - 1024);
		return -1;
	}
	if (parse_cell_limits(req, limits, lim, resp) < 0)
		return -1;
	*request =
	    kernel_request("execute", "code", json_object_new_string_len(code, (int)code_len));
	if (!*request) {
		h_fail(resp, ENOMEM, H_WHY_SANDBOX, 0, "out of memory");
		return -1;
	}
	return 0;
}

/* Run the cell in c and answer with the cell result. */
static void run_cell(const struct api_req *req, const struct session *s, const struct store_ctx *c,
		     const char *request, const struct sbx_limits *lim, bool base64, bool repl,
		     struct api_resp *resp)
{
	struct sbx_cell_result res;
	struct json_object *o;
	bool lost;

	if (ctx_call(req, s, c, request, lim, &res, &lost, resp) < 0)
		return;
	o = cell_json(req, &res, lost, base64);
	if (repl)
		json_object_object_add(o, "context_id", json_object_new_string(c->id));
	api_json(resp, 200, o);
	sbx_cell_result_free(&res);
}

void h_context_execute(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp);
	struct session *s = NULL;
	struct store_ctx c;
	struct sbx_limits lim;
	char *request = NULL;
	bool base64 = false;

	if (!body)
		return;
	if (cell_body(req, body, false, NULL, &request, &lim, &base64, resp) < 0 ||
	    ctx_open(req, &s, &c, resp) < 0)
		goto out;
	run_cell(req, s, &c, request, &lim, base64, false, resp);
out:
	free(request);
	session_close(s);
	json_object_put(body);
}

void h_session_repl(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp);
	const char *language = "python";
	struct session *s = NULL;
	struct store_ctx c;
	struct sbx_limits lim;
	char *request = NULL;
	bool base64 = false;
	int rc;

	if (!body)
		return;
	if (cell_body(req, body, true, &language, &request, &lim, &base64, resp) < 0 ||
	    !(s = h_session_open(req, req->params[0], resp)))
		goto out;
	rc = store_ctx_default(s->dir_fd, language, &c);
	if (rc == -ENOENT)
		rc = ctx_make(req, s, language, true, 0, 0, &c, resp) < 0 ? 1 : 0;
	else if (rc < 0)
		h_errno(resp, rc, NULL, "");
	if (rc != 0)
		goto out;
	run_cell(req, s, &c, request, &lim, base64, true, resp);
out:
	free(request);
	session_close(s);
	json_object_put(body);
}

void h_context_variables(const struct api_req *req, struct api_resp *resp)
{
	struct sbx_limits lim = req->cfg->defaults;
	struct json_object *reply = NULL, *vars, *arr;
	struct sbx_cell_result res;
	struct session *s = NULL;
	struct store_ctx c;
	enum sbx_status status;
	char *rq = NULL;
	bool lost;
	size_t n;

	if (ctx_open(req, &s, &c, resp) < 0)
		return;
	if (!(rq = kernel_request("variables", NULL, NULL))) {
		h_fail(resp, ENOMEM, H_WHY_SANDBOX, 0, "out of memory");
		goto out;
	}
	if (ctx_call(req, s, &c, rq, &lim, &res, &lost, resp) < 0)
		goto out;
	reply = reply_parse(&res, "variables");
	status = res.status;
	sbx_cell_result_free(&res);
	if (!reply || !json_object_object_get_ex(reply, "variables", &vars) ||
	    !json_object_is_type(vars, json_type_array)) {
		char why[96];

		snprintf(why, sizeof(why), "the context did not list its variables (status %s)",
			 sbx_status_name(status));
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, why);
		goto out;
	}
	arr = json_object_new_array();
	n = json_object_array_length(vars);
	for (size_t i = 0; i < n && i < CTX_MAX_VARIABLES; i++) {
		struct json_object *v = json_object_array_get_idx(vars, i), *o;
		const char *name = str_member(v, "name", CTX_VAR_NAME_MAX),
			   *type = str_member(v, "type", 256), *repr = str_member(v, "repr", 4096);

		if (!name || !type || !repr)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "name", api_utf8_string(name, strlen(name)));
		json_object_object_add(o, "type", api_utf8_string(type, strlen(type)));
		json_object_object_add(o, "repr", api_utf8_string(repr, strlen(repr)));
		json_object_array_add(arr, o);
	}
	api_json(resp, 200, arr);
out:
	json_object_put(reply);
	free(rq);
	session_close(s);
}

/* A variable name both languages accept: [A-Za-z_][A-Za-z0-9_]*, at most CTX_VAR_NAME_MAX. */
static bool var_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (!len || len > CTX_VAR_NAME_MAX || (n[0] >= '0' && n[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9') || n[i] == '_'))
			return false;
	return true;
}

void h_context_variable_put(const struct api_req *req, struct api_resp *resp)
{
	const char *name = req->params[2] ? req->params[2] : "";
	struct sbx_limits lim = req->cfg->defaults;
	struct json_object *value = NULL, *rqo, *reply = NULL, *v, *o;
	struct json_tokener *tok;
	struct sbx_cell_result res;
	struct session *s = NULL;
	struct store_ctx c;
	char *rq = NULL;
	bool lost, ok;

	if (!var_name_ok(name)) {
		api_error(resp, 400, "invalid_value", "name",
			  "A variable name is 1 to %d of A-Z, a-z, 0-9 and \"_\", not starting "
			  "with a digit.",
			  CTX_VAR_NAME_MAX);
		return;
	}
	/* The body is any JSON value: the variable's new value. */
	tok = json_tokener_new_ex(API_JSON_MAX_DEPTH);
	if (!tok || !req->body || !req->body_len || req->body_len > INT32_MAX) {
		json_tokener_free(tok);
		api_error(resp, 400, "invalid_json", NULL,
			  "The body must be a JSON value: the variable's new value.");
		return;
	}
	value = json_tokener_parse_ex(tok, req->body, (int)req->body_len);
	ok = json_tokener_get_error(tok) == json_tokener_success;
	if (ok)
		for (size_t i = json_tokener_get_parse_end(tok); i < req->body_len; i++)
			if (!strchr(" \t\r\n", req->body[i]))
				ok = false;
	json_tokener_free(tok);
	if (!ok) {
		json_object_put(value);
		api_error(resp, 400, "invalid_json", NULL,
			  "The body must be one JSON value: the variable's new value.");
		return;
	}
	if (ctx_open(req, &s, &c, resp) < 0)
		goto out;
	rqo = json_object_new_object();
	json_object_object_add(rqo, "op", json_object_new_string("set_variable"));
	json_object_object_add(rqo, "name", json_object_new_string(name));
	json_object_object_add(rqo, "value", value);
	value = NULL;
	rq = strdup(json_object_to_json_string_ext(rqo, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(rqo);
	if (!rq) {
		h_fail(resp, ENOMEM, H_WHY_SANDBOX, 0, "out of memory");
		goto out;
	}
	if (ctx_call(req, s, &c, rq, &lim, &res, &lost, resp) < 0)
		goto out;
	reply = reply_parse(&res, "set_variable");
	sbx_cell_result_free(&res);
	if (!reply || !json_object_object_get_ex(reply, "ok", &v) ||
	    !json_object_is_type(v, json_type_boolean)) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, "the kernel's set_variable reply is malformed");
		goto out;
	}
	if (!json_object_get_boolean(v)) {
		struct json_object *e = error_json(reply), *m = NULL;

		json_object_object_get_ex(e, "value", &m);
		api_error(resp, 400, "invalid_value", "name",
			  "The variable could not be set: %.300s",
			  m ? json_object_get_string(m) : "the kernel refused it");
		json_object_put(e);
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "state", json_object_new_string(lost ? "lost" : "kept"));
	api_json(resp, 200, o);
out:
	json_object_put(value);
	json_object_put(reply);
	free(rq);
	session_close(s);
}

void h_context_interrupt(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = NULL;
	struct store_ctx c;
	int rc;

	if (ctx_open(req, &s, &c, resp) < 0)
		return;
	rc = sbx_client_ctx_interrupt(ctx_sock(req), c.id);
	if (rc == 0 || rc == -ENOENT) /* not running: nothing to interrupt */
		resp->status = 204;
	else
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
	session_close(s);
}

void h_context_restart(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = NULL;
	struct store_ctx c;
	struct json_object *o;
	int rc;

	if (ctx_open(req, &s, &c, resp) < 0)
		return;
	rc = sbx_client_ctx_restart(ctx_sock(req), c.id);
	if (rc == -ENOENT)
		rc = ctx_start(req, s, &c, resp) < 0 ? 1 : 0;
	else if (rc < 0)
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
	if (rc == 0) {
		o = ctx_json(&c, NULL);
		json_object_object_add(o, "state", json_object_new_string("idle"));
		api_json(resp, 200, o);
	}
	session_close(s);
}

void h_context_delete(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = NULL;
	struct store_ctx c;
	int rc;

	if (ctx_open(req, &s, &c, resp) < 0)
		return;
	rc = store_ctx_remove(s, c.id);
	if (rc == 0 || rc == -ENOENT) {
		rc = sbx_client_ctx_delete(ctx_sock(req), c.id);
		if (rc == 0 || rc == -ENOENT)
			resp->status = 204;
		else
			h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
	} else {
		h_errno(resp, rc, NULL, "");
	}
	session_close(s);
}
