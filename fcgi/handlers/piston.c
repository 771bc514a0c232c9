/* piston.c: Piston-compatible routes, for the bots and editor plugins written against Piston's
 * public API (closed in 2026): POST /api/v2/execute and GET /api/v2/runtimes.
 *
 * execute translates Piston's body ({language, version, files: [{name?, content, encoding?}],
 * stdin, args, run_timeout, run_cpu_time, run_memory_limit, compile_*}) into POST /v1/execute,
 * served through the route table as the same client (so admission, limits and logging are the
 * API's), and its result back into Piston's {language, version, run: {stdout, stderr, output,
 * code, signal, message, status, cpu_time, wall_time, memory}, compile?}. A request Piston would
 * refuse is 400 {"message": ...} as Piston says it (plus our error envelope beside it). The
 * compile step keeps the server's defaults (compile_* are accepted and not applied).
 * Clients that cannot send a header reach these routes through /piston/<key>/api/v2/... (nginx:
 * sbx-piston.conf), which the workers see as /api/v2/... . */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"

/* Piston's names for our languages (Piston: language "javascript" runtime "node", "c++"...). */
static const char *const piston_names[][2] = {
    {"javascript", "node"}, {"js", "node"},   {"c++", "cpp"},
    {"python3", "python"},  {"py", "python"}, {"sh", "bash"},
};

static const struct lang *piston_lang(const struct config *cfg, const char *name)
{
	const struct lang *l = config_lang(cfg, name);

	for (size_t i = 0; !l && i < sizeof(piston_names) / sizeof(piston_names[0]); i++)
		if (strcmp(piston_names[i][0], name) == 0)
			l = config_lang(cfg, piston_names[i][1]);
	return l;
}

/* Piston's error shape: {"message": ...}, with our envelope kept beside it. */
static void piston_error(struct api_resp *resp, int status, const char *code, const char *field,
			 const char *msg)
{
	api_error(resp, status, code, field, "%s", msg);
	json_object_object_add(resp->json, "message", json_object_new_string(msg));
}

/* "*", absent, the installed version, or a prefix of it ending at a dot ("3", "3.11"). */
static bool version_ok(const char *want, const char *have)
{
	size_t n;

	if (!want || !want[0] || strcmp(want, "*") == 0)
		return true;
	if (!have)
		return false;
	n = strlen(want);
	return strncmp(want, have, n) == 0 && (have[n] == '\0' || have[n] == '.');
}

static ssize_t mem_read(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	(void)len;
	return 0;
}

/* POST /v1/execute with body, as outer's client, into resp. */
static void call_execute(const struct api_req *outer, struct json_object *body,
			 struct api_resp *resp)
{
	struct api_req r = *outer;
	const struct route *rt = NULL;
	char buf[64];
	size_t len = 0;
	const char *text = json_object_to_json_string_length(body, JSON_C_TO_STRING_PLAIN, &len);

	r.method = "POST";
	r.query = "";
	r.body = text;
	r.body_len = len;
	r.read_body = mem_read;
	r.body_total = (int64_t)len;
	route_serve(&r, "/v1/execute", buf, sizeof(buf), resp, &rt);
}

/* Piston's limits into our "limits": run_timeout (ms), run_cpu_time (ms), run_memory_limit
 * (bytes; -1 is Piston's "no limit": our default). 0 or -1 with a 400. */
static int piston_limits(struct json_object *in, struct json_object *limits, struct api_resp *resp)
{
	static const char *const keys[][2] = {
	    {"run_timeout", "wall_ms"}, {"run_cpu_time", "cpu_ms"}, {"run_memory_limit", NULL}};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct json_object *v = NULL;
		int64_t n;

		if (!json_object_object_get_ex(in, keys[i][0], &v) || !v)
			continue;
		if (!json_object_is_type(v, json_type_int)) {
			piston_error(resp, 400, "invalid_type", keys[i][0],
				     "Limits must be integers.");
			return -1;
		}
		n = json_object_get_int64(v);
		if (n == -1)
			continue;
		if (n <= 0) {
			piston_error(resp, 400, "invalid_limit", keys[i][0],
				     "Limits must be positive (or -1 for the default).");
			return -1;
		}
		if (keys[i][1])
			json_object_object_add(limits, keys[i][1], json_object_new_int64(n));
		else
			json_object_object_add(limits, "memory_mb",
					       json_object_new_int64((n + (1 << 20) - 1) >> 20));
	}
	return 0;
}

/* Our run result (borrowed) as Piston's stage object (owned). */
static struct json_object *piston_stage(struct json_object *r)
{
	struct json_object *s = json_object_new_object(), *v;
	const char *status = "", *out = "", *err = "";
	const char *pst = NULL, *msg = NULL;
	char *both;

	if (json_object_object_get_ex(r, "status", &v))
		status = json_object_get_string(v);
	if (json_object_object_get_ex(r, "stdout", &v) && json_object_is_type(v, json_type_string))
		out = json_object_get_string(v);
	if (json_object_object_get_ex(r, "stderr", &v) && json_object_is_type(v, json_type_string))
		err = json_object_get_string(v);
	json_object_object_add(s, "stdout", json_object_new_string(out));
	json_object_object_add(s, "stderr", json_object_new_string(err));
	/* Piston interleaves the two streams; we keep them apart, so stdout then stderr. */
	both = malloc(strlen(out) + strlen(err) + 1);
	if (both) {
		strcpy(stpcpy(both, out), err);
		json_object_object_add(s, "output", json_object_new_string(both));
		free(both);
	}
	v = NULL;
	json_object_object_get_ex(r, "exit_code", &v);
	json_object_object_add(s, "code", json_object_get(v));
	v = NULL;
	json_object_object_get_ex(r, "signal", &v);
	if (strcmp(status, "timeout") == 0) {
		pst = "TO", msg = "Time limit exceeded";
		json_object_object_add(s, "signal", json_object_new_string("SIGKILL"));
	} else {
		json_object_object_add(s, "signal", json_object_get(v));
	}
	if (strcmp(status, "error") == 0)
		pst = "RE", msg = "Non-zero exit status";
	else if (strcmp(status, "signal") == 0)
		pst = "SG", msg = "Killed by a signal";
	else if (strcmp(status, "memory_limit") == 0)
		pst = "SG", msg = "Memory limit exceeded";
	else if (strcmp(status, "output_limit") == 0)
		pst = "OL", msg = "Output limit exceeded";
	json_object_object_add(s, "message", msg ? json_object_new_string(msg) : NULL);
	json_object_object_add(s, "status", pst ? json_object_new_string(pst) : NULL);
	if (json_object_object_get_ex(r, "cpu_ms", &v))
		json_object_object_add(s, "cpu_time", json_object_get(v));
	if (json_object_object_get_ex(r, "wall_ms", &v))
		json_object_object_add(s, "wall_time", json_object_get(v));
	if (json_object_object_get_ex(r, "memory_kb", &v))
		json_object_object_add(s, "memory",
				       json_object_new_int64(json_object_get_int64(v) * 1024));
	return s;
}

/* Piston's body into ours (owned), or NULL with a 400. */
static struct json_object *piston_body(const struct api_req *req, struct json_object *in,
				       const struct lang **lang, struct api_resp *resp)
{
	static const char *const fields[] = {"language",
					     "version",
					     "files",
					     "stdin",
					     "args",
					     "compile_timeout",
					     "run_timeout",
					     "compile_cpu_time",
					     "run_cpu_time",
					     "compile_memory_limit",
					     "run_memory_limit",
					     NULL};
	struct json_object *out = NULL, *files = NULL, *nf, *limits, *v;
	const char *lname = NULL, *version = NULL;
	char msg[256];
	size_t n;

	if (api_only_fields(in, fields, resp) < 0 ||
	    api_get_string(in, "language", true, &lname, NULL, resp) < 0 ||
	    api_get_string(in, "version", false, &version, NULL, resp) < 0 ||
	    api_get_array(in, "files", &files, resp) < 0)
		goto fail;
	*lang = piston_lang(req->cfg, lname);
	if (!*lang || !version_ok(version, (*lang)->version)) {
		snprintf(msg, sizeof(msg), "%.64s-%.64s runtime is unknown", lname,
			 version ? version : "*");
		piston_error(resp, 400, "unsupported_language", "language", msg);
		return NULL;
	}
	if (!files || (n = json_object_array_length(files)) == 0) {
		piston_error(resp, 400, "missing_field", "files", "files is required as an array");
		return NULL;
	}
	out = json_object_new_object();
	json_object_object_add(out, "language", json_object_new_string((*lang)->id));
	nf = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(files, i), *g = NULL,
				   *name = NULL;
		char def[32];

		if (!json_object_is_type(f, json_type_object)) {
			json_object_put(nf);
			piston_error(resp, 400, "invalid_type", "files", "files[] must be objects");
			goto fail;
		}
		if (json_object_deep_copy(f, &g, NULL) != 0)
			continue;
		/* Piston names an unnamed file itself; the first is the entry point. */
		if (!json_object_object_get_ex(g, "name", &name) || !name) {
			snprintf(def, sizeof(def), "file%zu.code", i);
			json_object_object_add(
			    g, "name", json_object_new_string(i ? def : (*lang)->source_file));
		}
		json_object_array_add(nf, g);
	}
	json_object_object_add(out, "files", nf);
	if (json_object_object_get_ex(in, "stdin", &v) && v)
		json_object_object_add(out, "stdin", json_object_get(v));
	if (json_object_object_get_ex(in, "args", &v) && v)
		json_object_object_add(out, "args", json_object_get(v));
	limits = json_object_new_object();
	json_object_object_add(out, "limits", limits);
	if (piston_limits(in, limits, resp) < 0)
		goto fail;
	return out;
fail:
	json_object_put(out);
	if (resp->json) {
		struct json_object *e, *m;

		if (json_object_object_get_ex(resp->json, "error", &e) &&
		    json_object_object_get_ex(e, "message", &m) &&
		    !json_object_object_get_ex(resp->json, "message", NULL))
			json_object_object_add(resp->json, "message", json_object_get(m));
	}
	return NULL;
}

void h_piston_execute(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *in = api_body_object(req, resp), *body = NULL, *out, *r, *c;
	const struct lang *lang = NULL;
	struct api_resp inner;

	api_resp_init(&inner);
	if (!in) {
		struct json_object *e, *m;

		if (resp->json && json_object_object_get_ex(resp->json, "error", &e) &&
		    json_object_object_get_ex(e, "message", &m))
			json_object_object_add(resp->json, "message", json_object_get(m));
		return;
	}
	if (!(body = piston_body(req, in, &lang, resp)))
		goto out;
	call_execute(req, body, &inner);
	if (inner.status != 200 || !inner.json) {
		struct json_object *e, *m;

		/* Refusals and failures pass through, with Piston's "message" beside. */
		*resp = inner;
		api_resp_init(&inner);
		if (resp->json && json_object_object_get_ex(resp->json, "error", &e) &&
		    json_object_object_get_ex(e, "message", &m))
			json_object_object_add(resp->json, "message", json_object_get(m));
		goto out;
	}
	r = inner.json;
	out = json_object_new_object();
	json_object_object_add(out, "language", json_object_new_string(lang->id));
	json_object_object_add(out, "version",
			       json_object_new_string(lang->version ? lang->version : ""));
	if (json_object_object_get_ex(r, "compile", &c) && c)
		json_object_object_add(out, "compile", piston_stage(c));
	/* A failed compile: Piston answers with the compile stage only. */
	if (!json_object_object_get_ex(r, "stage", NULL))
		json_object_object_add(out, "run", piston_stage(r));
	api_json(resp, 200, out);
	/* RateLimit and the like of the inner run are the answer's too. */
	snprintf(resp->headers, sizeof(resp->headers), "%s", inner.headers);
out:
	api_resp_free(&inner);
	json_object_put(body);
	json_object_put(in);
}

void h_piston_runtimes(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; i < req->cfg->nlangs; i++) {
		const struct lang *l = &req->cfg->langs[i];
		struct json_object *o = json_object_new_object(), *al = json_object_new_array();
		const char *language = l->id;

		for (char **a = l->aliases; a && *a; a++)
			json_object_array_add(al, json_object_new_string(*a));
		for (size_t k = 0; k < sizeof(piston_names) / sizeof(piston_names[0]); k++)
			if (strcmp(piston_names[k][1], l->id) == 0)
				json_object_array_add(al,
						      json_object_new_string(piston_names[k][0]));
		/* Piston calls node's language "javascript" (runtime "node"). */
		if (strcmp(l->id, "node") == 0)
			language = "javascript";
		json_object_object_add(o, "language", json_object_new_string(language));
		json_object_object_add(o, "version",
				       json_object_new_string(l->version ? l->version : ""));
		json_object_object_add(o, "aliases", al);
		if (language != l->id)
			json_object_object_add(o, "runtime", json_object_new_string(l->id));
		json_object_array_add(arr, o);
	}
	api_json(resp, 200, arr);
}
