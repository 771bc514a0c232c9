/* exec.c: the handlers that run code: POST /v1/execute, /v1/sessions/{id}/execute,
 * /v1/sessions/{id}/run and the seed's POST /run.
 *
 * Compiled languages take two sandbox runs in the same /work: the compile (config "compile"
 * argv, default limits, output binary written into /work) and, only when it succeeded, the run.
 * /tmp is private to each run, so the binary cannot live there. In a session the binary stays
 * with the session's files (and counts against its quota). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile_cache.h"
#include "handlers.h"
#include "packages.h"
#include "seed_compat.h"

#define EXEC_MAX_FILES 256
#define EXEC_MAX_ARGS 128
/* What a request may put into argv: the sandbox's limit less room for the fixed words. */
#define EXEC_MAX_ARGV_BYTES (SBX_MAX_ARGS_BYTES - 8192u)

/* Write len bytes to path under root (a fresh scratch dir), making parents. Host-side access
 * never follows a symlink (fs_parent resolves beneath root; the last segment is O_NOFOLLOW).
 * 0, or -1 with resp filled. */
static int write_file(int root, const char *path, const char *data, size_t len, const char *field,
		      struct api_resp *resp)
{
	const char *base = NULL;
	int parent = -1, fd = -1, rc = -1;
	struct stat st;
	size_t off = 0;

	if (fs_path_check(path, strlen(path)) < 0) {
		h_errno(resp, EINVAL, field, path);
		goto out;
	}
	parent = fs_parent(root, path, true, &base);
	if (parent < 0) {
		h_errno(resp, parent, field, path);
		goto out;
	}
	/* O_NONBLOCK: a FIFO must not hang the worker. */
	fd = openat(parent, base, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || ftruncate(fd, 0) < 0) {
		h_errno(resp, fd < 0 ? errno : EISDIR, field, path);
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			h_errno(resp, n < 0 ? errno : EIO, field, path);
			goto out;
		}
		off += (size_t)n;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (parent >= 0)
		close(parent);
	return rc;
}

/* Where an execute request's files go: a fresh scratch dir (plain writes) or a session (atomic
 * writes under its quota, through the session store). */
struct exec_target {
	int root;
	struct session *session;
};

static int put_file(const struct exec_target *t, const char *path, const char *data, size_t len,
		    const char *field, struct api_resp *resp)
{
	struct fs_mem m = {data, len, 0};
	struct fs_source src = FS_MEM_SOURCE(m);
	struct store_err e = {0};
	bool created;

	if (!t->session)
		return write_file(t->root, path, data, len, field, resp);
	if (fs_write_atomic(t->session, path, strlen(path), &src, &created, NULL, &e) == 0)
		return 0;
	h_store_error(resp, &e, &(struct h_where){.field = field, .path = path});
	return -1;
}

/* Everything one execute request asks for, borrowed from the parsed body. */
struct exec_args {
	const struct lang *lang;
	const char *entry;			 /* path of the file {file} names */
	char entry_dotted[SESSION_PATH_MAX + 3]; /* "./" + entry, for entries starting with '-' */
	const char *stdin_buf;
	size_t stdin_len;
	unsigned char *stdin_owned; /* stdin decoded from base64 (freed by exec_args_free) */
	const char *args[EXEC_MAX_ARGS + 1];
	size_t nargs;
	bool base64;
	struct sbx_limits limits;
	struct json_object *packages;  /* execute's "packages" (borrowed), or NULL */
	const struct pkg_layer *layer; /* their layer, held by h_execute, or NULL */
};

/* "stdin" (and "stdin_encoding": "utf8", the default, or "base64") of body: *buf borrowed from
 * body, or decoded into *owned (caller frees). 0 or -1 with a 400 naming the field. */
static int parse_stdin(struct json_object *body, const char **buf, size_t *len,
		       unsigned char **owned, struct api_resp *resp)
{
	const char *enc = NULL;
	char why[80];

	*owned = NULL;
	if (api_get_string(body, "stdin", false, buf, len, resp) < 0 ||
	    api_get_string(body, "stdin_encoding", false, &enc, NULL, resp) < 0)
		return -1;
	if (!enc || strcmp(enc, "utf8") == 0 || strcmp(enc, "utf-8") == 0)
		return 0;
	if (strcmp(enc, "base64") != 0) {
		api_error(resp, 400, "invalid_value", "stdin_encoding",
			  "stdin_encoding must be \"utf8\" or \"base64\".");
		return -1;
	}
	if (*buf && api_base64_decode(*buf, *len, owned, len, why, sizeof(why)) < 0) {
		api_error(resp, 400, "invalid_value", "stdin", "stdin is not base64: %s.", why);
		return -1;
	}
	if (*owned)
		*buf = (const char *)*owned;
	return 0;
}

/* "stream" and "interactive" of a request: a streamed answer, and the run's id for it. */
struct exec_live {
	bool stream, interactive;
	struct sbx_run_spec spec;
	struct run_stream rs;
};

/* body's "stream" and "interactive" into lv (the id made when streaming). 0 or -1 (400). */
static int parse_live(const struct api_req *req, struct json_object *body, bool has_stdin,
		      const char *session, struct exec_live *lv, struct api_resp *resp)
{
	memset(lv, 0, sizeof(*lv));
	if (api_get_bool(body, "stream", &lv->stream, resp) < 0 ||
	    api_get_bool(body, "interactive", &lv->interactive, resp) < 0)
		return -1;
	if (lv->interactive && !lv->stream) {
		api_error(resp, 400, "invalid_value", "interactive",
			  "\"interactive\": true needs \"stream\": true (the start event carries "
			  "the run_id stdin is sent to).");
		return -1;
	}
	if (lv->interactive && has_stdin) {
		api_error(resp, 400, "invalid_value", "stdin",
			  "With \"interactive\": true, send stdin through POST "
			  "/v1/runs/{run_id}/stdin.");
		return -1;
	}
	if (!lv->stream)
		return 0;
	if (runs_new_id(lv->spec.id) < 0) {
		api_error(resp, 500, "internal_error", NULL, "No random run id.");
		return -1;
	}
	snprintf(lv->spec.owner, sizeof(lv->spec.owner), "%s", req->client);
	runs_session_key(session ? session : "", lv->spec.session);
	lv->spec.interactive = lv->interactive;
	return 0;
}

/* Start the streamed answer when asked: the answer to fill is then *local (resp is sent). */
static struct api_resp *live_begin(const struct api_req *req, struct exec_live *lv, bool base64,
				   struct api_resp *local, struct api_resp *resp)
{
	api_resp_init(local);
	if (!lv || !lv->stream ||
	    run_stream_begin_held(&lv->rs, req, resp, base64, lv->spec.id) < 0)
		return resp;
	return local;
}

/* The end event from the local answer, when streaming. */
static void live_end(struct exec_live *lv, struct api_resp *ans, struct api_resp *resp)
{
	if (ans == resp)
		return;
	run_stream_end(&lv->rs, ans);
	api_resp_free(ans);
}

static int parse_encoding(struct json_object *body, bool *base64, struct api_resp *resp)
{
	const char *enc = NULL;
	int rc = api_get_string(body, "output_encoding", false, &enc, NULL, resp);

	*base64 = false;
	if (rc < 0)
		return -1;
	if (rc == 1 || strcmp(enc, "utf8") == 0 || strcmp(enc, "utf-8") == 0 ||
	    strcmp(enc, "text") == 0)
		return 0;
	if (strcmp(enc, "base64") == 0) {
		*base64 = true;
		return 0;
	}
	api_error(resp, 400, "invalid_value", "output_encoding",
		  "output_encoding must be \"utf8\" or \"base64\".");
	return -1;
}

/* The request's "args" (may be NULL) into x. 0 or -1 with a 400 filled. */
static int exec_args_parse(struct json_object *args, struct exec_args *x, struct api_resp *resp)
{
	size_t total = 0;

	if (!args)
		return 0;
	x->nargs = json_object_array_length(args);
	if (x->nargs > EXEC_MAX_ARGS) {
		api_error(resp, 400, "invalid_value", "args", "At most %d args.", EXEC_MAX_ARGS);
		return -1;
	}
	for (size_t i = 0; i < x->nargs; i++) {
		struct json_object *a = json_object_array_get_idx(args, i);

		if (!json_object_is_type(a, json_type_string) ||
		    strlen(json_object_get_string(a)) != (size_t)json_object_get_string_len(a)) {
			api_error(resp, 400, "invalid_type", "args",
				  "args[%zu] must be a string without NUL bytes.", i);
			return -1;
		}
		x->args[i] = json_object_get_string(a);
		total += (size_t)json_object_get_string_len(a) + 1;
	}
	/* The broker refuses bigger argv; say so as a 400, not as a sandbox failure. */
	if (total > EXEC_MAX_ARGV_BYTES) {
		api_error(resp, 400, "invalid_value", "args",
			  "args hold %zu bytes; the most is %u.", total, EXEC_MAX_ARGV_BYTES);
		return -1;
	}
	return 0;
}

/* files[i] (f) written under t; the first one is the entry. 0 or -1 with resp filled. */
static int exec_file(const struct exec_target *t, struct json_object *f, size_t i,
		     struct exec_args *x, struct api_resp *resp)
{
	static const char *const ffields[] = {"path", "name", "content", "encoding", NULL};
	const char *path = NULL, *content = NULL, *enc = NULL;
	size_t plen = 0, clen = 0;
	char field[32], *raw = NULL;
	int rc, hp;

	snprintf(field, sizeof(field), "files[%zu]", i);
	if (!json_object_is_type(f, json_type_object)) {
		api_error(resp, 400, "invalid_type", "files", "%s must be an object.", field);
		return -1;
	}
	/* "name" is Piston's spelling of "path"; accept either. */
	if (api_only_fields(f, ffields, resp) < 0 ||
	    (hp = api_get_string(f, "path", false, &path, &plen, resp)) < 0 ||
	    (hp == 1 && api_get_string(f, "name", true, &path, &plen, resp) < 0) ||
	    api_get_string(f, "content", true, &content, &clen, resp) < 0 ||
	    api_get_string(f, "encoding", false, &enc, NULL, resp) < 0)
		return -1;
	if (fs_path_check(path, plen) < 0) {
		h_errno(resp, EINVAL, "files", path);
		return -1;
	}
	if (enc && strcmp(enc, "base64") == 0) {
		char why[80];
		unsigned char *dec = NULL;

		if (api_base64_decode(content, clen, &dec, &clen, why, sizeof(why)) < 0) {
			api_error(resp, 400, "invalid_value", "files",
				  "%s.content is not base64: %s.", field, why);
			return -1;
		}
		content = raw = (char *)dec;
	} else if (enc && strcmp(enc, "utf8") != 0 && strcmp(enc, "utf-8") != 0) {
		api_error(resp, 400, "invalid_value", "files",
			  "%s.encoding must be \"utf8\" or \"base64\".", field);
		return -1;
	}
	rc = put_file(t, path, content, clen, "files", resp);
	free(raw);
	if (rc < 0)
		return -1;
	if (i == 0) {
		x->entry = path;
		snprintf(x->entry_dotted, sizeof(x->entry_dotted), "./%s", path);
	}
	return 0;
}

/* Parse the execute body and write its files under root. 0 or -1 with resp filled. */
static int exec_prepare(const struct api_req *req, struct json_object *body,
			const struct exec_target *t, struct exec_args *x, struct exec_live *lv,
			struct api_resp *resp)
{
	static const char *const fields[] = {
	    "language",	      "code",	     "files",	 "stdin",
	    "stdin_encoding", "args",	     "limits",	 "output_encoding",
	    "stream",	      "interactive", "packages", NULL};
	struct json_object *files = NULL, *args = NULL, *limits = NULL;
	const char *lname = NULL, *code = NULL;
	size_t code_len = 0, i;
	int hc, hf;

	if (api_only_fields(body, fields, resp) < 0 ||
	    api_get_string(body, "language", true, &lname, NULL, resp) < 0 ||
	    (hc = api_get_string(body, "code", false, &code, &code_len, resp)) < 0 ||
	    (hf = api_get_array(body, "files", &files, resp)) < 0 ||
	    parse_stdin(body, &x->stdin_buf, &x->stdin_len, &x->stdin_owned, resp) < 0 ||
	    api_get_array(body, "args", &args, resp) < 0 ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    api_get_array(body, "packages", &x->packages, resp) < 0 ||
	    parse_encoding(body, &x->base64, resp) < 0 ||
	    parse_live(req, body, x->stdin_buf != NULL, t->session ? t->session->id : NULL, lv,
		       resp) < 0)
		return -1;
	x->lang = config_lang(req->cfg, lname);
	if (!x->lang) {
		char names[256] = "";

		for (i = 0; i < req->cfg->nlangs; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", req->cfg->langs[i].id);
		api_error(resp, 400, "unsupported_language", "language",
			  "Language \"%.40s\" is not installed; use one of: %s.", lname, names);
		return -1;
	}
	if ((hc == 0) == (hf == 0)) {
		api_error(resp, 400, "missing_field", "code",
			  "Send either \"code\" or \"files\", not both.");
		return -1;
	}
	if (exec_args_parse(args, x, resp) < 0 ||
	    run_parse_limits(req->cfg, x->lang, limits, &x->limits, resp) < 0)
		return -1;
	if (code) {
		x->entry = x->lang->source_file;
		return put_file(t, x->entry, code, code_len, "code", resp);
	}
	if (json_object_array_length(files) == 0 ||
	    json_object_array_length(files) > EXEC_MAX_FILES) {
		api_error(resp, 400, "invalid_value", "files", "files must hold 1 to %d files.",
			  EXEC_MAX_FILES);
		return -1;
	}
	for (i = 0; i < json_object_array_length(files); i++)
		if (exec_file(t, json_object_array_get_idx(files, i), i, x, resp) < 0)
			return -1;
	return 0;
}

/* argv from a language template: "{file}" -> entry, "{args}" -> the request's args. */
static void build_argv(char *const *tmpl, const struct exec_args *x, const char **argv, size_t max)
{
	size_t n = 0;

	for (; tmpl && *tmpl && n + 1 < max; tmpl++) {
		if (strcmp(*tmpl, "{args}") == 0) {
			for (size_t i = 0; i < x->nargs && n + 1 < max; i++)
				argv[n++] = x->args[i];
		} else if (strcmp(*tmpl, "{file}") == 0) {
			/* "-c" as a file name must not become an option of the interpreter. */
			argv[n++] = x->entry[0] == '-' ? x->entry_dotted : x->entry;
		} else {
			argv[n++] = *tmpl;
		}
	}
	argv[n] = NULL;
}

/* Compile (when the language needs it) and run in root; fills resp with the result, or streams
 * it (lv->stream): the compile's output too, its events marked "stage": "compile". */
static void exec_run(const struct api_req *req, int root, const struct exec_args *x,
		     struct exec_live *lv, struct api_resp *resp)
{
	const char *argv[EXEC_MAX_ARGS + 32], *env[4];
	struct sbx_result res;
	struct json_object *compile = NULL, *out;
	size_t nenv;
	struct sbx_limits climits;
	struct h_ccache cc = {.c.dir_fd = -1};
	/* A streamed run's id is registered from the start: during the compile, stdin sent to it
	 * is held for the program and a signal cancels the compile. */
	struct sbx_run_held held = {0};
	struct sbx_run_spec cspec;
	const char *stdin_buf = x->stdin_buf;
	size_t stdin_len = x->stdin_len;
	int hit = 0;
	struct api_resp local, *ans = live_begin(req, lv, x->base64, &local, resp);
	struct run_stream *rs = ans == resp ? NULL : &lv->rs;
	int rc = 0;

	memset(&res, 0, sizeof(res));
	if (x->lang->compile) {
		/* The compiler gets the server's defaults: a tight run limit must not starve it. */
		run_parse_limits(req->cfg, x->lang, NULL, &climits, ans);
		build_argv(x->lang->compile, x, argv, sizeof(argv) / sizeof(argv[0]));
		/* The client's compile cache: the same inputs, the same binary, no compile run. */
		hit = h_ccache_lookup(req, root, x->lang, argv, &cc);
		if (!hit) {
			if (rs) {
				rs->stage = "compile";
				cspec = lv->spec;
				cspec.compile = true;
				cspec.held = &held;
			}
			rc = run_sandboxed_stream(req->cfg, root, -1, argv, NULL, NULL, 0, &climits,
						  rs, rs ? &cspec : NULL, &res, ans);
			if (rs) {
				run_stream_settle(rs, &res);
				rs->stage = NULL;
			}
		}
		if (rc < 0)
			goto out;
		compile = hit ? h_ccache_json(&cc) : run_result_json(&res, x->base64);
		json_object_object_add(compile, "cached", json_object_new_boolean(hit));
		if (!hit && res.status == SBX_OK)
			h_ccache_store(&cc, root);
		if (!hit && res.status != SBX_OK) {
			/* The compile's result stands in for the run's, which never happened. */
			out = run_result_json(&res, x->base64);
			json_object_object_add(out, "stage", json_object_new_string("compile"));
			json_object_object_add(out, "compile", json_object_get(compile));
			api_json(ans, 200, out);
			goto out;
		}
		sbx_result_free(&res);
		if (rs && lv->spec.interactive && (held.len || held.eof)) {
			stdin_buf = held.data;
			stdin_len = held.len;
			lv->spec.stdin_eof = held.eof;
		}
	}
	build_argv(x->lang->run, x, argv, sizeof(argv) / sizeof(argv[0]));
	/* Installed packages (a session's, or a stateless layer mounted read-only) are importable.
	 */
	if (x->layer) {
		nenv = 0;
		env[nenv++] = x->layer->env;
		env[nenv] = NULL;
	} else {
		pkg_env(root, env, sizeof(env) / sizeof(env[0]));
	}
	rc = run_sandboxed_stream(req->cfg, root, x->layer ? x->layer->fd : -1, argv,
				  env[0] ? env : NULL, stdin_buf, stdin_len, &x->limits, rs,
				  rs ? &lv->spec : NULL, &res, ans);
	if (rs)
		run_stream_settle(rs, &res);
	if (rc < 0)
		goto out;
	out = run_result_json(&res, x->base64);
	json_object_object_add(out, "language", json_object_new_string(x->lang->id));
	if (compile)
		json_object_object_add(out, "compile", json_object_get(compile));
	if (rs)
		json_object_object_add(out, "run_id", json_object_new_string(lv->spec.id));
	api_json(ans, 200, out);
out:
	if (compile)
		json_object_put(compile);
	h_ccache_close(&cc);
	sbx_result_free(&res);
	free(held.data);
	live_end(lv, ans, resp);
}

/* A run in a session may not write one file larger than what its quota has left (RLIMIT_FSIZE;
 * 0 would mean "default" to the sandbox, so a full session gets 1 byte). */
static void cap_to_quota(const struct session *s, struct sbx_limits *lim)
{
	uint64_t left = session_quota_left(s);

	if (left < lim->file_size_bytes)
		lim->file_size_bytes = left ? left : 1;
}

struct scratch_job {
	const struct config *cfg;
	int fd;
	char path[];
};

static void scratch_job_run(void *ctx)
{
	struct scratch_job *j = ctx;

	scratch_destroy(h_store(j->cfg), j->fd, j->path);
	free(j);
}

/* Remove the scratch dir after the response is sent (the client does not wait for it). */
static void scratch_later(const struct config *cfg, int fd, const char *path)
{
	size_t n = strlen(path) + 1;
	struct scratch_job *j = malloc(sizeof(*j) + n);

	if (!j) {
		scratch_destroy(h_store(cfg), fd, path);
		return;
	}
	j->cfg = cfg;
	j->fd = fd;
	memcpy(j->path, path, n);
	route_defer(scratch_job_run, j);
}

void h_execute(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp);
	struct json_object *pkgs = NULL;
	struct pkg_layer layer = {-1, -1, -1, 0, NULL};
	struct exec_args x;
	struct exec_live lv;
	char path[4096] = "";
	int root = -1;

	memset(&x, 0, sizeof(x));
	if (!body)
		goto out;
	{
		struct store_err e = {0};

		/* Below the disk reserve no run starts (store_reserve_check, in scratch_create). */
		root = scratch_create(h_store(req->cfg), path, sizeof(path), &e);
		if (root < 0) {
			h_store_error(resp, &e, NULL);
			goto out;
		}
	}
	if (exec_prepare(req, body, &(struct exec_target){root, NULL}, &x, &lv, resp) < 0)
		goto out;
	if (x.packages) {
		int r = pkg_layer_open(req, x.lang, x.packages, &layer, &pkgs, resp);

		if (r != 0)
			goto out;
		x.layer = &layer;
	}
	exec_run(req, root, &x, &lv, resp);
	if (pkgs && resp->status == 200 && resp->json)
		json_object_object_add(resp->json, "packages", json_object_get(pkgs));
out:
	pkg_layer_close(&layer);
	if (root >= 0)
		scratch_later(req->cfg, root, path);
	free(x.stdin_owned);
	if (pkgs)
		json_object_put(pkgs);
	if (body)
		json_object_put(body);
}

void h_session_execute(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp);
	struct session *s = NULL;
	struct exec_args x;
	struct exec_live lv;

	memset(&x, 0, sizeof(x));
	if (!body)
		goto out;
	if (h_reserve_check(req, resp) < 0)
		goto out;
	s = h_session_open(req, req->params[0], resp);
	if (!s)
		goto out;
	if (exec_prepare(req, body, &(struct exec_target){s->root_fd, s}, &x, &lv, resp) < 0)
		goto out;
	if (x.packages) {
		api_error(resp, 400, "invalid_value", "packages",
			  "A session installs packages with POST /v1/sessions/{id}/packages.");
		goto out;
	}
	cap_to_quota(s, &x.limits);
	exec_run(req, s->root_fd, &x, &lv, resp);
out:
	if (s)
		session_close(s);
	free(x.stdin_owned);
	if (body)
		json_object_put(body);
}

/* /bin/sh -c cmd in the session; seed adds {id} and mirrors stdout/stderr. */
static void shell_run(const struct api_req *req, struct api_resp *resp, bool seed)
{
	static const char *const v1_fields[] = {
	    "cmd",	   "stdin", "stdin_encoding", "limits", "output_encoding", "stream",
	    "interactive", NULL};
	struct json_object *body = api_body_object(req, resp), *limits = NULL, *out;
	const char *cmd = NULL, *id = NULL, *in = NULL, *env[3];
	size_t cmd_len = 0, in_len = 0;
	unsigned char *in_owned = NULL;
	struct session *s = NULL;
	struct sbx_limits lim;
	struct sbx_result res;
	bool base64 = false;
	struct exec_live lv;
	struct api_resp local, *ans = resp;
	int rc;

	memset(&res, 0, sizeof(res));
	memset(&lv, 0, sizeof(lv));
	if (!body)
		goto out;
	/* The seed's clients send only {id, cmd}; its routes stay lenient about extra fields. */
	if ((!seed && api_only_fields(body, v1_fields, resp) < 0) ||
	    (seed && api_get_string(body, "id", true, &id, NULL, resp) < 0) ||
	    api_get_string(body, "cmd", true, &cmd, &cmd_len, resp) < 0 ||
	    parse_stdin(body, &in, &in_len, &in_owned, resp) < 0 ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    parse_encoding(body, &base64, resp) < 0)
		goto out;
	if (strlen(cmd) != cmd_len) {
		api_error(resp, 400, "invalid_value", "cmd", "cmd must not contain NUL bytes.");
		goto out;
	}
	if (cmd_len > EXEC_MAX_ARGV_BYTES) {
		api_error(resp, 400, "invalid_value", "cmd",
			  "cmd is %zu bytes; the most is %u (write a script file and run that).",
			  cmd_len, EXEC_MAX_ARGV_BYTES);
		goto out;
	}
	if (run_parse_limits(req->cfg, NULL, limits, &lim, resp) < 0)
		goto out;
	if (seed)
		seed_run_limits(limits, &lim);
	if (h_reserve_check(req, resp) < 0)
		goto out;
	s = seed ? h_session_open_or_create(req, id, resp)
		 : h_session_open(req, req->params[0], resp);
	if (!s)
		goto out;
	cap_to_quota(s, &lim);
	/* The seed's routes never stream. */
	if (!seed && parse_live(req, body, in != NULL, s->id, &lv, resp) < 0)
		goto out;
	pkg_env(s->root_fd, env, sizeof(env) / sizeof(env[0]));
	ans = live_begin(req, &lv, base64, &local, resp);
	rc = run_sandboxed_stream(
	    req->cfg, s->root_fd, -1, (const char *const[]){"/bin/sh", "-c", cmd, NULL},
	    env[0] ? env : NULL, in, in_len, &lim, ans == resp ? NULL : &lv.rs,
	    ans == resp ? NULL : &lv.spec, &res, ans);
	if (ans != resp)
		run_stream_settle(&lv.rs, &res);
	if (rc < 0)
		goto out;
	out = run_result_json(&res, base64);
	if (seed)
		json_object_object_add(out, "id", json_object_new_string(s->id));
	if (ans != resp)
		json_object_object_add(out, "run_id", json_object_new_string(lv.spec.id));
	api_json(ans, 200, out);
out:
	live_end(&lv, ans, resp);
	sbx_result_free(&res);
	free(in_owned);
	if (s)
		session_close(s);
	if (body)
		json_object_put(body);
}

void h_session_run(const struct api_req *req, struct api_resp *resp)
{
	shell_run(req, resp, false);
}

void h_seed_run(const struct api_req *req, struct api_resp *resp)
{
	shell_run(req, resp, true);
}
