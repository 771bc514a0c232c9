/* evaluate.c: POST /v1/evaluate, POST /v1/sessions/{id}/evaluate and the seed's POST
 * /evaluate_code.
 *
 * One request is ONE sandbox run: the body is checked here, turned into a JSON job and handed on
 * stdin to the in-sandbox runner (fcgi/evaluate/runner/evaluate.py, bound at /opt/sbx), which loads
 * or compiles the code once and forks one limited child per case. The runner answers with one JSON
 * document on stdout; this file turns it into the API's response, comparing stdout for `cases`
 * (compare.c) and applying stop_on_first_failure (both in decide.c), so both are decided in one
 * place whatever the runner did. The job and answer formats: fcgi/evaluate/runner/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "decide.h"
#include "eval.h"
#include "../handlers/packages.h"
#include "judge.h"
#include "../handlers/seed_compat.h"

static struct json_object *argv_json(char **argv)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; argv && argv[i]; i++)
		json_object_array_add(a, json_object_new_string(argv[i]));
	return a;
}

/* The `cases` for the runner: each case's stdin and args only. The expected_stdout never
 * enters the sandbox: make_case compares by index with the request's own copy, so no process
 * there (the submission included) can read an answer. Caller owns the result. */
static struct json_object *stdin_cases(struct json_object *cases)
{
	struct json_object *out = json_object_new_array();
	size_t n = json_object_array_length(cases);

	for (size_t i = 0; i < n; i++) {
		struct json_object *src = json_object_array_get_idx(cases, i), *c, *v;

		c = json_object_new_object();
		if (json_object_object_get_ex(src, "stdin", &v))
			json_object_object_add(c, "stdin", json_object_get(v));
		if (json_object_object_get_ex(src, "args", &v))
			json_object_object_add(c, "args", json_object_get(v));
		json_object_array_add(out, c);
	}
	return out;
}

/* The request's whole time budget, from its own limits: the cases run in waves of `parallel`,
 * each wave within one case's wall limit plus what starting and reaping a case costs; before
 * them the code loads (Python; bounded by the runner at one wall limit plus a second) or
 * compiles (the runner's compile step: at most EVAL_COMPILE_MS). Never more than the server's
 * evaluate wall_ms. A case that stops the runner (SIGSTOP) then holds the slot only for what
 * the request asked, not the server's whole evaluate budget. */
static uint64_t request_budget_ms(const struct config *cfg, const struct eval_req *r, int parallel)
{
	uint64_t waves = (r->ncases + (size_t)parallel - 1) / (size_t)parallel;
	uint64_t ms = waves * (r->limits.wall_ms + EVAL_CASE_OVERHEAD_MS);

	if (r->lang && r->lang->compile)
		ms += EVAL_COMPILE_MS;
	else
		ms += r->limits.wall_ms + 1000;
	return ms < cfg->evaluate_wall_ms ? ms : cfg->evaluate_wall_ms;
}

/* The runner's job document (fcgi/evaluate/runner/README.md). Caller owns the result. */
static struct json_object *build_job(const struct config *cfg, const struct eval_req *r,
				     int parallel)
{
	struct json_object *job = json_object_new_object(), *lim = json_object_new_object();
	static const char *const modes[] = {"io", "test", "stdout"};

	json_object_object_add(job, "mode", json_object_new_string(modes[r->mode]));
	json_object_object_add(job, "code", json_object_new_string(r->code));
	if (r->entry_point)
		json_object_object_add(job, "entry_point", json_object_new_string(r->entry_point));
	if (r->mode == EVAL_TEST) {
		struct json_object *arr = json_object_new_array(), *c = json_object_new_object();

		json_object_object_add(c, "test", json_object_new_string(r->test));
		json_object_array_add(arr, c);
		json_object_object_add(job, "cases", arr);
	} else if (r->mode == EVAL_STDOUT) {
		json_object_object_add(job, "cases", stdin_cases(r->cases));
	} else {
		json_object_object_add(job, "cases", json_object_get(r->cases));
	}
	json_object_object_add(lim, "wall_ms", json_object_new_uint64(r->limits.wall_ms));
	json_object_object_add(lim, "cpu_ms", json_object_new_uint64(r->limits.cpu_ms));
	json_object_object_add(lim, "memory_bytes", json_object_new_uint64(r->limits.memory_bytes));
	json_object_object_add(lim, "output_bytes", json_object_new_uint64(r->limits.output_bytes));
	json_object_object_add(lim, "output_hard_bytes",
			       json_object_new_uint64(r->limits.output_hard_bytes));
	json_object_object_add(lim, "file_size_bytes",
			       json_object_new_uint64(r->limits.file_size_bytes));
	json_object_object_add(lim, "processes", json_object_new_uint64(r->limits.processes));
	json_object_object_add(job, "limits", lim);
	json_object_object_add(job, "deadline_ms",
			       json_object_new_uint64(request_budget_ms(cfg, r, parallel)));
	json_object_object_add(job, "parallel", json_object_new_int(parallel));
	json_object_object_add(job, "stop_on_failure", json_object_new_boolean(r->stop_on_failure));
	if (r->namespace)
		json_object_object_add(job, "isolation", json_object_new_string("namespace"));
	json_object_object_add(job, "work_dir", json_object_new_string(SBX_WORK_DIR));
	json_object_object_add(job, "cwd", json_object_new_string(SBX_WORK_DIR));
	if (r->mode == EVAL_STDOUT) {
		json_object_object_add(job, "source_file",
				       json_object_new_string(r->lang->source_file));
		json_object_object_add(job, "run", argv_json(r->lang->run));
		if (r->lang->compile)
			json_object_object_add(job, "compile", argv_json(r->lang->compile));
		eval_compile_job(r, job); /* compiled here: the runner runs the binary */
		json_object_object_add(job, "python_fork",
				       json_object_new_boolean(eval_is_python(r->lang)));
	}
	return job;
}

/* The whole run's limits: the backstop behind the runner's per-case limits. */
static struct sbx_limits backstop(const struct config *cfg, const struct eval_req *r, int parallel)
{
	struct sbx_limits l = r->limits;
	uint64_t mem = r->limits.memory_bytes * (uint64_t)parallel;

	if (r->lang->compile && mem < (1ull << 30))
		mem = 1ull << 30; /* the runner's compile step may take 1 GiB */
	l.wall_ms = request_budget_ms(cfg, r, parallel) + EVAL_GRACE_MS;
	l.cpu_ms = l.wall_ms * (uint64_t)parallel;
	l.memory_bytes = mem + EVAL_RUNNER_MEMORY;
	l.processes = r->limits.processes * (uint32_t)parallel + 16;
	l.output_bytes = EVAL_ANSWER_BYTES;
	l.output_hard_bytes = EVAL_ANSWER_BYTES + (16u << 20);
	return l;
}

/* A string member of a runner object as a new JSON string with invalid UTF-8 replaced (the
 * runner's answer passed through code the user controls), or NULL (JSON null) when absent or
 * not a string. Caller owns the result. */
/* A streamed job: one line of the runner (events.c): a case is decided and sent as it ends (in
 * index order with stop_on_first_failure, so that no case is sent before it is known not to be
 * skipped), the compile step as an event of its own. A checker's cases wait for the checker. */
static int runner_line(void *arg, const char *line, size_t len)
{
	struct decide *d = arg;
	struct json_tokener *tok = json_tokener_new_ex(EVAL_ANSWER_DEPTH);
	struct json_object *msg = NULL, *o, *v;
	int rc = 0;

	if (!tok)
		return 0;
	msg = json_tokener_parse_ex(tok, line, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success || !msg ||
	    !json_object_is_type(msg, json_type_object))
		goto out;
	if (json_object_object_get_ex(msg, "compile", &o) &&
	    json_object_is_type(o, json_type_object)) {
		d->ce = eval_compile_failed(msg);
		eval_stream_event(d->es, "compile", o);
	} else if (json_object_object_get_ex(msg, "case", &o) &&
		   json_object_is_type(o, json_type_object) &&
		   json_object_object_get_ex(o, "index", &v) &&
		   json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);

		if (i < 0 || (uint64_t)i >= d->r->ncases || d->done[i] || d->ahead[i])
			goto out;
		if (eval_compile_failed(
			o)) /* one Python case loads the code itself: a SyntaxError */
			d->ce = true;
		if (d->judge || d->r->checker.lang)
			goto out; /* judged when the solution's runs are over */
		if (!d->r->stop_on_failure) {
			rc = eval_decide_case(d, (size_t)i, o, false, "");
			goto out;
		}
		d->ahead[i] = json_object_get(o);
		for (; d->next < d->r->ncases && d->ahead[d->next]; d->next++)
			if ((rc = eval_decide_case(d, d->next, d->ahead[d->next], false, "")) < 0)
				break;
	}
out:
	json_object_put(msg);
	json_tokener_free(tok);
	return rc < 0 || d->es->rs.resp->gone ? -1 : 0;
}

/* The runner's answer from its stdout: the whole of it, or (streamed) its last line. NULL when
 * there is none that is a JSON object. Caller owns it. */
static struct json_object *parse_answer(const struct sbx_result *res, bool streamed)
{
	struct json_tokener *tok;
	struct json_object *answer = NULL;
	const char *p = res->out;
	size_t len = res->out_len;

	if (!len || res->out_truncated)
		return NULL;
	if (streamed) {
		const char *nl = memrchr(p, '\n', len);

		if (nl) {
			len -= (size_t)(nl + 1 - p);
			p = nl + 1;
		}
	}
	tok = json_tokener_new_ex(EVAL_ANSWER_DEPTH);
	if (!tok)
		return NULL;
	answer = json_tokener_parse_ex(tok, p, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success || !answer ||
	    !json_object_is_type(answer, json_type_object)) {
		json_object_put(answer);
		answer = NULL;
	}
	json_tokener_free(tok);
	return answer;
}

/* Why the runner gave no answer, for every case's error. */
static void runner_failure(const struct sbx_result *res, char *buf, size_t len)
{
	size_t tail = res->err_len > 300 ? 300 : res->err_len;

	if (res->status == SBX_TIMEOUT)
		snprintf(buf, len,
			 "the evaluation ran out of time (the request's budget: its "
			 "cases' wall limits in waves, plus loading or compiling, at most the "
			 "server's evaluate wall_ms)");
	else
		snprintf(buf, len, "the evaluation runner failed (%s%s%s): %.*s",
			 sbx_status_name(res->status), res->signal ? ", " : "",
			 res->signal ? sbx_signal_name(res->signal) : "", (int)tail,
			 res->err + res->err_len - tail);
}

/* The runner's argument for a job it holds no answer of (runner/sbx_eval.py: DIRECT_ARG) */
#define EVAL_RUNNER_DIRECT "--nothing-held"

/* Run r in dirfd (the run's /work) and build the /v1 response object; es (may be NULL) streams
 * the cases as they end. On a sandbox failure fills a 500 and returns NULL; otherwise the caller
 * owns the result. *answer_out receives the runner's parsed answer (caller puts it; NULL when
 * the runner gave none). */
static struct json_object *evaluate_run(const struct api_req *req, const struct eval_req *r,
					int dirfd, struct eval_stream *es,
					struct json_object **answer_out, struct api_resp *resp)
{
	/* -S: site costs ~10 ms a request (the runner adds dist-packages itself); -B: /opt/sbx is
	 * read-only and its modules load from the __pycache__ made at build time. A job with no
	 * answer for the runner to hold (test mode; `cases` mode, whose expected_stdout stays
	 * here) says so: its supervisor is then its own executor, a process less
	 * (runner/README.md, "How a request runs"). */
	static const char *const held_argv[] = {EVAL_PYTHON, "-S", "-B", EVAL_RUNNER, NULL};
	static const char *const direct_argv[] = {EVAL_PYTHON,	      "-S", "-B", EVAL_RUNNER,
						  EVAL_RUNNER_DIRECT, NULL};
	const char *const *argv = r->mode == EVAL_IO ? held_argv : direct_argv;
	int parallel = eval_parallelism();
	struct json_object *job = build_job(req->cfg, r, parallel), *answer = NULL, *out = NULL;
	struct json_object *cases = NULL, *v;
	struct sbx_limits lim = backstop(req->cfg, r, parallel);
	struct sbx_result res;
	const char *text;
	size_t text_len;
	struct decide d = {.r = r, .first_fail = SIZE_MAX, .es = es, .resp = resp};
	char why[512] = "";
	/* "packages": the shared read-only layer, for the runner and every case (never a checker)
	 */
	int layer_fd = r->layer_fd > 0 ? r->layer_fd : -1, rc;
	const char *const layer_env_v[] = {r->layer_env, NULL};
	const char *const *layer_env = r->layer_env ? layer_env_v : NULL;

	*answer_out = NULL;
	memset(&res, 0, sizeof(res));
	d.done = calloc(r->ncases, sizeof(*d.done));
	d.ahead = calloc(r->ncases, sizeof(*d.ahead));
	if (!d.done || !d.ahead) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory.");
		goto out;
	}
	if (es)
		json_object_object_add(job, "stream", json_object_new_boolean(true));
	text = json_object_to_json_string_length(job, JSON_C_TO_STRING_PLAIN, &text_len);
	if (es) {
		es->on_line = runner_line;
		es->arg = &d;
		rc = eval_runner_run(req->cfg, dirfd, layer_fd, layer_env, argv, text, text_len,
				     &lim, es, &res, resp);
	} else {
		rc = run_sandboxed_stream(req->cfg, dirfd, layer_fd, argv, layer_env, text,
					  text_len, &lim, NULL, NULL, &res, resp);
	}
	if (rc < 0)
		goto out;
	answer = parse_answer(&res, es != NULL);
	if (!answer || !json_object_object_get_ex(answer, "cases", &d.acases) ||
	    !json_object_is_type(d.acases, json_type_array)) {
		d.acases = NULL; /* a "cases" that is no array must never be indexed */
		runner_failure(&res, why, sizeof(why));
	}
	d.ce = d.ce || eval_compile_failed(answer);
	/* The checker runs after the solution, in sandbox runs of its own (judge.h); only for
	 * cases the solution finished (exit 0): a solution's own failure is judged first. */
	if (r->checker.lang && d.acases && !d.ce && !(d.judge = judge_open(req, &r->checker, resp)))
		goto out;
	if (d.judge && !r->stop_on_failure && eval_judge_all(&d, parallel) < 0)
		goto out;
	cases = json_object_new_array();
	for (size_t i = 0; i < r->ncases; i++) {
		if (!d.done[i] &&
		    eval_decide_case(&d, i,
				     d.acases ? json_object_array_get_idx(d.acases, i) : NULL,
				     !d.acases && res.status == SBX_TIMEOUT, why) < 0)
			goto fail;
		json_object_array_add(cases, json_object_get(d.done[i]));
	}
	out = json_object_new_object();
	json_object_object_add(out, "passed", json_object_new_boolean(d.passed_count == r->ncases));
	json_object_object_add(out, "passed_count", json_object_new_uint64(d.passed_count));
	json_object_object_add(out, "total", json_object_new_uint64(r->ncases));
	json_object_object_add(out, "cases", cases);
	cases = NULL;
	v = NULL;
	if (answer)
		json_object_object_get_ex(answer, "compile", &v);
	json_object_object_add(out, "compile", json_object_get(v));
	v = NULL;
	if (answer)
		json_object_object_get_ex(answer, "load", &v);
	json_object_object_add(out, "load", json_object_get(v));
	json_object_object_add(out, "error", why[0] ? json_object_new_string(why) : NULL);
	if (r->checker.lang)
		json_object_object_add(out, "checker_compile",
				       json_object_get(judge_compile_json(d.judge)));
	/* The whole run (every case, the runner, a compile): what the request cost. */
	json_object_object_add(out, "wall_ms", json_object_new_uint64(res.wall_ms));
	json_object_object_add(out, "cpu_ms", json_object_new_uint64(res.cpu_ms));
	json_object_object_add(out, "memory_kb", json_object_new_uint64(res.memory_kb));
	*answer_out = answer;
	answer = NULL;
	goto out;
fail:
	json_object_put(cases);
out:
	sbx_result_free(&res);
	for (size_t i = 0; i < r->ncases; i++) {
		if (d.held)
			json_object_put(d.held[i]);
		if (d.done)
			json_object_put(d.done[i]);
		if (d.ahead)
			json_object_put(d.ahead[i]);
	}
	free(d.held);
	free(d.done);
	free(d.ahead);
	judge_free(d.judge);
	json_object_put(job);
	json_object_put(answer);
	return out;
}

/* The answer to fill: es's when streaming (after its start event), else resp. NULL with an error
 * in resp when the stream could not begin. */
static struct api_resp *answer_begin(const struct api_req *req, const struct eval_req *r,
				     struct eval_stream *es, const char *session,
				     struct api_resp *resp)
{
	if (!r->stream)
		return resp;
	return eval_stream_begin(es, req, resp, session) < 0 ? NULL : &es->answer;
}

void h_evaluate(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp), *out = NULL, *answer = NULL;
	struct api_resp *ans = NULL;
	struct eval_stream es;
	struct eval_req r;
	struct store_err e = {0};
	struct pkg_layer layer = {-1, -1, -1, 0, NULL};
	struct json_object *pkgs = NULL;
	char path[4096];
	int dirfd = -1;

	if (!body || eval_parse_v1(req, body, &r, resp) < 0 ||
	    !(ans = answer_begin(req, &r, &es, NULL, resp)))
		goto out;
	/* "packages": the solution's (the runner and every case import them; a checker is the
	 * grader's and never sees them). */
	if (r.packages && r.interactor.lang) {
		api_error(resp, 400, "invalid_request", "packages",
			  "packages are not available with an interactor yet.");
		goto out;
	}
	if (r.packages) {
		if (pkg_layer_open(req, r.lang, r.packages, &layer, &pkgs, resp) != 0)
			goto out;
		r.layer_fd = layer.fd;
		/* Python finds the layer itself (sbx_eval.py, python_site): a PYTHONPATH would
		 * also reach the runner's supervisor, ahead of its standard library. */
		r.layer_env = strncmp(layer.env, "PYTHONPATH=", 11) == 0 ? NULL : layer.env;
	}
	if (r.interactor.lang) { /* two sandbox runs per case, no runner: interact.c */
		out = interact_run(req, &r, ans != resp ? &es : NULL, ans);
		if (out)
			api_json(ans, 200, out);
		goto out;
	}
	dirfd = scratch_create(h_store(req->cfg), path, sizeof(path), &e);
	if (dirfd < 0) {
		h_store_error(ans, &e, NULL);
		goto out;
	}
	/* A compiled solution through the client's compile cache (compile.c). */
	if (eval_compile_solution(req, &r, dirfd, ans) < 0)
		goto out;
	out = evaluate_run(req, &r, dirfd, ans != resp ? &es : NULL, &answer, ans);
	eval_compile_account(&r, out);
	if (out && pkgs)
		json_object_object_add(out, "packages", json_object_get(pkgs));
	if (out)
		api_json(ans, 200, out);
out:
	pkg_layer_close(&layer);
	json_object_put(pkgs);
	if (dirfd >= 0)
		scratch_destroy(h_store(req->cfg), dirfd, path);
	if (ans && ans != resp)
		eval_stream_end(&es);
	if (dirfd >= 0)
		json_object_put(r.compiled);
	json_object_put(answer);
	json_object_put(body);
}

void h_session_evaluate(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = NULL, *out = NULL, *answer = NULL;
	struct api_resp *ans = NULL;
	struct eval_stream es;
	struct session *s = NULL;
	struct eval_req r;

	if (h_reserve_check(req, resp) < 0 || !(s = h_session_open(req, req->params[0], resp)))
		goto out;
	body = api_body_object(req, resp);
	if (!body || eval_parse_v1(req, body, &r, resp) < 0)
		goto out;
	if (r.packages) {
		api_error(resp, 400, "invalid_value", "packages",
			  "A session installs packages with POST /v1/sessions/{id}/packages.");
		goto out;
	}
	if (r.interactor.lang) {
		api_error(resp, 400, "invalid_request", "interactor",
			  "interactor is for POST /v1/evaluate: an interactive solution runs in a "
			  "directory of its own, not the session's.");
		goto out;
	}
	if (!(ans = answer_begin(req, &r, &es, req->params[0], resp)))
		goto out;
	out = evaluate_run(req, &r, s->root_fd, ans != resp ? &es : NULL, &answer, ans);
	if (out)
		api_json(ans, 200, out);
out:
	if (ans && ans != resp)
		eval_stream_end(&es);
	session_close(s);
	json_object_put(answer);
	json_object_put(body);
}

/* The seed's case_results item {passed, got, expected, error, case, input} from our case c
 * and the request's case src (both borrowed; either may be NULL). Caller owns the result. */
static struct json_object *seed_case(struct json_object *c, struct json_object *src, size_t i)
{
	struct json_object *o = json_object_new_object(), *v = NULL;

	eval_copy_member(o, c, "passed");
	eval_copy_member(o, c, "got");
	/* Like the seed: the evaluated expected value when the call returned, else the raw output
	 * text of the case. */
	if (json_object_object_get_ex(c, "status", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), "ok") == 0)
		json_object_object_get_ex(c, "expected", &v);
	else
		v = NULL;
	if (!v && src)
		json_object_object_get_ex(src, "output", &v);
	json_object_object_add(o, "expected", json_object_get(v));
	eval_copy_member(o, c, "error");
	json_object_object_add(o, "case", json_object_new_uint64(i));
	v = NULL;
	if (src)
		json_object_object_get_ex(src, "input", &v);
	json_object_object_add(o, "input", json_object_get(v));
	return o;
}

void h_seed_evaluate_code(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *body = api_body_object(req, resp), *out = NULL, *answer = NULL;
	struct json_object *seed = NULL, *results, *cases, *v, *limits = NULL;
	struct session *s = NULL;
	struct eval_req r;
	const char *id = NULL;

	memset(&r, 0, sizeof(r));
	/* Like the seed (pydantic), extra fields are ignored here; types are still checked. */
	if (!body || api_get_string(body, "id", true, &id, NULL, resp) < 0 ||
	    api_get_string(body, "code", true, &r.code, NULL, resp) < 0 ||
	    api_get_string(body, "entry_point", true, &r.entry_point, NULL, resp) < 0 ||
	    api_get_array(body, "io_cases", &r.cases, resp) < 0 ||
	    api_get_object(body, "limits", &limits, resp) < 0)
		goto out;
	if (!r.cases) {
		api_error(resp, 400, "missing_field", "io_cases",
			  "Field \"io_cases\" is required.");
		goto out;
	}
	r.mode = EVAL_IO;
	if (eval_parse_isolation(body, &r, true, resp) <
	    0) /* the seed's own semantics by default */
		goto out;
	r.lang = config_lang(req->cfg, "python");
	r.ncases = json_object_array_length(r.cases);
	if (!r.lang) {
		api_error(resp, 500, "internal_error", NULL, "The server config has no python.");
		goto out;
	}
	if (r.ncases > req->cfg->max_cases) {
		api_error(resp, 400, "too_many_cases", "io_cases",
			  "%zu cases; the maximum per request is %u.", r.ncases,
			  req->cfg->max_cases);
		goto out;
	}
	if (eval_check_cases(r.cases, EVAL_IO, false, resp) < 0 ||
	    run_parse_limits(req->cfg, r.lang, limits, &r.limits, resp) < 0)
		goto out;
	seed_run_limits(limits, &r.limits); /* each case ends before the client's timeout */
	if (h_reserve_check(req, resp) < 0 || !(s = h_session_open_or_create(req, id, resp)))
		goto out;
	seed = json_object_new_object();
	results = json_object_new_array();
	if (r.ncases) {
		out = evaluate_run(req, &r, s->root_fd, NULL, &answer, resp);
		if (!out)
			goto out;
	}
	cases = NULL;
	if (out)
		json_object_object_get_ex(out, "cases", &cases);
	for (size_t i = 0; i < r.ncases; i++)
		json_object_array_add(results, seed_case(json_object_array_get_idx(cases, i),
							 json_object_array_get_idx(r.cases, i), i));
	v = NULL;
	if (out)
		json_object_object_get_ex(out, "passed", &v);
	json_object_object_add(seed, "passed", v ? json_object_get(v) : json_object_new_boolean(1));
	json_object_object_add(seed, "case_results", results);
	/* Per-case errors live in case_results (as in the seed); this one says why none could run.
	 */
	v = NULL;
	if (out)
		json_object_object_get_ex(out, "error", &v);
	if (!v && answer && json_object_object_get_ex(answer, "load", &v) && v &&
	    json_object_object_get_ex(v, "error", &v) && !json_object_is_type(v, json_type_string))
		v = NULL;
	json_object_object_add(seed, "error", json_object_get(v));
	api_json(resp, 200, seed);
	seed = NULL;
out:
	json_object_put(seed);
	json_object_put(out);
	json_object_put(answer);
	session_close(s);
	json_object_put(body);
}
