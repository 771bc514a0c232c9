/* contexts.c: the context routes of API.md ("Contexts"): a long-lived sandboxed interpreter per
 * session. The broker holds the contexts (sbx_client_ctx_*); the session directory records them
 * (store/contexts.c), so a context the broker no longer has (idle eviction, a broker restart) is
 * made again on the next call, which then says state "lost" -- never silently.
 *
 * The kernel's words are checked by contexts_reply.c. "stream": true answers NDJSON as runs do:
 * output, display data as "result" events as they are made, then the cell result. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "contexts.h"

#define CTX_MAX_VARIABLES 1000 /* variables listed */
#define CTX_VAR_NAME_MAX 128   /* a variable name, bytes */

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
 * res filled (the caller frees it), or -1 with resp filled. With lv, streamed through it. */
static int ctx_call(const struct api_req *req, const struct session *s, const struct store_ctx *c,
		    const char *request, const struct sbx_limits *lim, struct sbx_cell_result *res,
		    bool *lost, struct ctx_live *lv, struct api_resp *resp)
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
	rc = sbx_client_ctx_call_stream(ctx_sock(req), c->id, &cell, ctx_cancel_fd(req),
					lv ? ctx_live_output : NULL, lv, res);
	if (rc == -ENOENT) {
		sbx_cell_result_free(res);
		if (ctx_start(req, s, c, resp) < 0)
			return -1;
		*lost = true;
		rc = sbx_client_ctx_call_stream(ctx_sock(req), c->id, &cell, ctx_cancel_fd(req),
						lv ? ctx_live_output : NULL, lv, res);
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
	if (!rq || ctx_call(req, s, c, rq, &lim, &res, &lost, NULL, resp) < 0) {
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

/* The body of execute and repl: code, limits, stream, output_encoding. 0 or -1. */
static int cell_body(const struct api_req *req, struct json_object *body, bool repl,
		     const char **language, char **request, struct sbx_limits *lim, bool *base64,
		     bool *stream, struct api_resp *resp)
{
	static const char *const exec_fields[] = {"code", "limits", "stream", "output_encoding",
						  NULL};
	static const char *const repl_fields[] = {"code",   "language",	       "limits",
						  "stream", "output_encoding", NULL};
	struct json_object *limits = NULL;
	const char *code = NULL, *enc = NULL;
	size_t code_len = 0;
	int rc;

	if (api_only_fields(body, repl ? repl_fields : exec_fields, resp) < 0 ||
	    api_get_string(body, "code", true, &code, &code_len, resp) < 0 ||
	    (repl && parse_language(body, false, language, resp) < 0) ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    api_get_bool(body, "stream", stream, resp) < 0 ||
	    (rc = api_get_string(body, "output_encoding", false, &enc, NULL, resp)) < 0)
		return -1;
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

/* Run the cell in c and answer with the cell result; with stream (when the request can
 * stream), as NDJSON events ending with it. */
static void run_cell(const struct api_req *req, const struct session *s, const struct store_ctx *c,
		     const char *request, const struct sbx_limits *lim, bool base64, bool repl,
		     bool stream, struct api_resp *resp)
{
	struct sbx_cell_result res;
	struct ctx_live lv, *live = NULL;
	struct api_resp local, *ans = resp;
	struct json_object *o;
	bool lost;

	if (stream) {
		ctx_live_init(&lv, req);
		api_resp_init(&local);
		if (run_stream_begin(&lv.rs, req, resp, base64, "") == 0) {
			live = &lv;
			ans = &local;
		}
	}
	if (ctx_call(req, s, c, request, lim, &res, &lost, live, ans) == 0) {
		o = ctx_cell_json(req, &res, lost, base64, live);
		if (repl)
			json_object_object_add(o, "context_id", json_object_new_string(c->id));
		api_json(ans, 200, o);
		if (live) { /* the partial characters held back */
			struct sbx_result r = {.out = res.out, .out_len = res.out_len};

			r.err = res.err;
			r.err_len = res.err_len;
			run_stream_settle(&live->rs, &r);
		}
		sbx_cell_result_free(&res);
	}
	if (live)
		run_stream_end(&live->rs, ans);
	if (stream) {
		api_resp_free(&local);
		ctx_live_free(&lv);
	}
}

void h_context_execute(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp);
	struct session *s = NULL;
	struct store_ctx c;
	struct sbx_limits lim;
	char *request = NULL;
	bool base64 = false, stream = false;

	if (!body)
		return;
	if (cell_body(req, body, false, NULL, &request, &lim, &base64, &stream, resp) < 0 ||
	    ctx_open(req, &s, &c, resp) < 0)
		goto out;
	run_cell(req, s, &c, request, &lim, base64, false, stream, resp);
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
	bool base64 = false, stream = false;
	int rc;

	if (!body)
		return;
	if (cell_body(req, body, true, &language, &request, &lim, &base64, &stream, resp) < 0 ||
	    !(s = h_session_open(req, req->params[0], resp)))
		goto out;
	rc = store_ctx_default(s->dir_fd, language, &c);
	if (rc == -ENOENT)
		rc = ctx_make(req, s, language, true, 0, 0, &c, resp) < 0 ? 1 : 0;
	else if (rc < 0)
		h_errno(resp, rc, NULL, "");
	if (rc != 0)
		goto out;
	run_cell(req, s, &c, request, &lim, base64, true, stream, resp);
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
	if (ctx_call(req, s, &c, rq, &lim, &res, &lost, NULL, resp) < 0)
		goto out;
	reply = ctx_reply_parse(&res, "variables");
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
		const char *name = ctx_str_member(v, "name", CTX_VAR_NAME_MAX),
			   *type = ctx_str_member(v, "type", 256),
			   *repr = ctx_str_member(v, "repr", 4096);

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
	struct sbx_cell_result res;
	struct session *s = NULL;
	struct store_ctx c;
	char *rq = NULL;
	bool lost;

	if (!var_name_ok(name)) {
		api_error(resp, 400, "invalid_value", "name",
			  "A variable name is 1 to %d of A-Z, a-z, 0-9 and \"_\", not starting "
			  "with a digit.",
			  CTX_VAR_NAME_MAX);
		return;
	}
	/* The body is any JSON value (as strict as every body: no single quotes, no trailing
	 * commas, valid UTF-8): the variable's new value. */
	if (api_body_value(req, resp, &value) < 0)
		return;
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
	if (ctx_call(req, s, &c, rq, &lim, &res, &lost, NULL, resp) < 0)
		goto out;
	reply = ctx_reply_parse(&res, "set_variable");
	sbx_cell_result_free(&res);
	if (!reply || !json_object_object_get_ex(reply, "ok", &v) ||
	    !json_object_is_type(v, json_type_boolean)) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, "the kernel's set_variable reply is malformed");
		goto out;
	}
	if (!json_object_get_boolean(v)) {
		struct json_object *e = ctx_error_json(reply), *m = NULL;

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
