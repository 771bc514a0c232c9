/* compile.c: evaluate's compile steps through the client's compile cache (store/ccache.c, as
 * POST /v1/execute uses it in handlers/compile_cache.c): the same source, compiler, flags and
 * language for the same client reuse the binary instead of paying the compiler again.
 *
 * Two callers. judge.c compiles checkers, interactors and an interactive solution in a scratch
 * directory of their own with eval_compile(). A cases-mode solution of POST /v1/evaluate used to
 * be compiled only by the runner, inside the run, where the binary never reaches the host; when
 * the cache can take it, eval_compile_solution() now compiles it (or finds it) before the run in
 * the run's own /work, exactly as execute would (that /work holding nothing but the source, so
 * the key is execute's), and the runner is told (the job's `compiled`) to take the binary from
 * there instead of compiling. A failed compile goes to the runner the same way, which answers
 * it as its own (every case "compilation failed", verdict CE). The binary is kept only after
 * the compile run ended and is read through descriptors opened without following links
 * (ccache_put); a failed compile is never kept; the cache is per client. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "../handlers/compile_cache.h"

/* eval_compile(); need_key: only when the cache can take this compile, else 0 and nothing ran.
 * 1 compiled (or found), 0, or -1 with an error in resp. */
static int compile_cached(const struct api_req *req, int dirfd, const struct lang *lang,
			  const char *const *argv, const struct sbx_limits *lim, bool need_key,
			  struct sbx_result *res, struct json_object **compile,
			  struct api_resp *resp)
{
	struct h_ccache cc;
	int hit = h_ccache_lookup(req, dirfd, lang, argv, &cc);

	*compile = NULL;
	memset(res, 0, sizeof(*res));
	if (!hit && need_key && !cc.c.key[0]) {
		h_ccache_close(&cc);
		return 0;
	}
	if (hit) {
		res->status = SBX_OK;
		*compile = h_ccache_json(&cc);
	} else {
		if (run_sandboxed(req->cfg, dirfd, argv, NULL, NULL, 0, lim, res, resp) < 0) {
			h_ccache_close(&cc);
			return -1;
		}
		*compile = run_result_json(res, false);
		if (res->status == SBX_OK) /* a failed compile is never kept */
			h_ccache_store(&cc, dirfd);
	}
	json_object_object_add(*compile, "cached", json_object_new_boolean(hit));
	h_ccache_close(&cc);
	return 1;
}

int eval_compile(const struct api_req *req, int dirfd, const struct lang *lang,
		 const char *const *argv, const struct sbx_limits *lim, struct sbx_result *res,
		 struct json_object **compile, struct api_resp *resp)
{
	return compile_cached(req, dirfd, lang, argv, lim, false, res, compile, resp) < 0 ? -1 : 0;
}

int eval_write_all(int fd, const char *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
	}
	return 0;
}

int eval_put_file(int dirfd, const char *name, const char *buf, size_t len, mode_t mode)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	int rc;

	if (fd < 0)
		return -errno;
	rc = eval_write_all(fd, buf, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* The binary's name in the work dir: "main" of a run argv starting with "/work/main", or NULL
 * when the language does not run what it compiled there (the cache cannot take it). */
static const char *binary_name(const struct lang *l)
{
	const char *bin = l->run && l->run[0] ? l->run[0] : "";

	if (strncmp(bin, SBX_WORK_DIR "/", sizeof(SBX_WORK_DIR)) || !bin[sizeof(SBX_WORK_DIR)] ||
	    strchr(bin + sizeof(SBX_WORK_DIR), '/'))
		return NULL;
	return bin + sizeof(SBX_WORK_DIR);
}

int eval_compile_solution(const struct api_req *req, struct eval_req *r, int dirfd,
			  struct api_resp *resp)
{
	const char *argv[64];
	struct sbx_limits lim;
	struct sbx_result res;
	size_t n = 0;
	int rc;

	r->compiled = NULL;
	/* The runner's own compile (and its packages layer) for what the cache cannot take. */
	if (r->mode != EVAL_STDOUT || !r->lang->compile || eval_is_python(r->lang) || r->packages ||
	    !binary_name(r->lang) || !req->client || !req->client[0] || !req->cfg->ccache_bytes)
		return 0;
	for (char *const *t = r->lang->compile; *t && n + 1 < sizeof(argv) / sizeof(argv[0]); t++)
		argv[n++] = strcmp(*t, "{file}") == 0 ? r->lang->source_file : *t;
	argv[n] = NULL;
	/* The runner's compile limits (sbx_eval.py compile_step), never less than the server's. */
	if (run_parse_limits(req->cfg, r->lang, NULL, &lim, resp) < 0)
		return -1;
	if (lim.wall_ms < EVAL_COMPILE_MS)
		lim.wall_ms = EVAL_COMPILE_MS;
	if (lim.cpu_ms < EVAL_COMPILE_MS)
		lim.cpu_ms = EVAL_COMPILE_MS;
	if (lim.memory_bytes < (1ull << 30))
		lim.memory_bytes = 1ull << 30;
	rc = eval_put_file(dirfd, r->lang->source_file, r->code, strlen(r->code), 0644);
	if (rc < 0) {
		api_error(resp, 500, "internal_error", NULL, "The code could not be written: %s.",
			  strerror(-rc));
		return -1;
	}
	rc = compile_cached(req, dirfd, r->lang, argv, &lim, true, &res, &r->compiled, resp);
	sbx_result_free(&res);
	if (rc < 0)
		return -1;
	/* The cases see the same empty /work as before: the runner takes the binary away too. */
	unlinkat(dirfd, r->lang->source_file, 0);
	return 0;
}

void eval_compile_job(const struct eval_req *r, struct json_object *job)
{
	if (!r->compiled)
		return;
	json_object_object_add(job, "compiled", json_object_get(r->compiled));
	json_object_object_add(job, "binary", json_object_new_string(binary_name(r->lang)));
}

static uint64_t member_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_uint64(v);
}

void eval_compile_account(const struct eval_req *r, struct json_object *out)
{
	struct json_object *v;

	if (!r->compiled || !out || !json_object_object_get_ex(r->compiled, "cached", &v) ||
	    json_object_get_boolean(v))
		return;
	json_object_object_add(out, "wall_ms",
			       json_object_new_uint64(member_u64(out, "wall_ms") +
						      member_u64(r->compiled, "wall_ms")));
	json_object_object_add(
	    out, "cpu_ms",
	    json_object_new_uint64(member_u64(out, "cpu_ms") + member_u64(r->compiled, "cpu_ms")));
}
