/* decide.c: the API's cases from the runner's answer, for evaluate.c: each case's fields and
 * verdict, stop_on_first_failure's skipped cases, and the checker's verdicts (judge.c) on the
 * cases the solution finished, decided in the final loop or as the runner streams them. */
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "judge.h"

static struct json_object *str_member(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return api_utf8_string(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

static uint64_t u64_member(struct json_object *o, const char *key)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	n = json_object_get_int64(v);
	return n < 0 ? 0 : (uint64_t)n;
}

/* The runner's status word if it is one we know, else "error": an unknown word never passes.
 * Static string. */
static const char *status_member(struct json_object *o)
{
	static const char *const known[] = {"ok",	    "error",	    "signal",  "timeout",
					    "memory_limit", "output_limit", "skipped", NULL};
	struct json_object *v;

	if (json_object_object_get_ex(o, "status", &v) &&
	    json_object_is_type(v, json_type_string)) {
		for (size_t i = 0; known[i]; i++)
			if (strcmp(json_object_get_string(v), known[i]) == 0)
				return known[i];
	}
	return "error";
}

void eval_copy_member(struct json_object *dst, struct json_object *src, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(src, key, &v);
	json_object_object_add(dst, key, json_object_get(v));
}

/* One API case from the runner's case rc (may be NULL when the runner said nothing); *passed
 * says whether it passed. rc is borrowed; the caller owns the result. */
static struct json_object *make_case(const struct eval_req *r, size_t i, struct json_object *rc,
				     bool *passed)
{
	struct json_object *c = json_object_new_object(), *v, *src = NULL;
	const char *status = rc ? status_member(rc) : "error";
	char hint[EVAL_HINT];

	*passed = false;
	if (r->cases)
		src = json_object_array_get_idx(r->cases, i);
	json_object_object_add(c, "index", json_object_new_uint64(i));
	if (r->mode == EVAL_STDOUT) {
		struct json_object *exp = NULL;
		const char *out = "";
		size_t out_len = 0;

		if (rc && json_object_object_get_ex(rc, "stdout", &v) &&
		    json_object_is_type(v, json_type_string)) {
			out = json_object_get_string(v);
			out_len = (size_t)json_object_get_string_len(v);
		}
		json_object_object_get_ex(src, "expected_stdout", &exp);
		hint[0] = '\0';
		if (r->checker.lang) /* the checker judges it (judge_case) */
			*passed = false;
		else if (strcmp(status, "ok") == 0)
			*passed =
			    !exp || cmp_outputs(&r->cmp, out, out_len, json_object_get_string(exp),
						(size_t)json_object_get_string_len(exp), hint,
						sizeof(hint));
		json_object_object_add(c, "passed", json_object_new_boolean(*passed));
		json_object_object_add(c, "status", json_object_new_string(status));
		json_object_object_add(c, "got", rc ? str_member(rc, "stdout") : NULL);
		json_object_object_add(c, "expected", json_object_get(exp));
		json_object_object_add(c, "error",
				       hint[0] ? json_object_new_string(hint)
				       : rc    ? str_member(rc, "error")
					       : NULL);
	} else {
		*passed = rc && strcmp(status, "ok") == 0 &&
			  json_object_object_get_ex(rc, "passed", &v) && json_object_get_boolean(v);
		json_object_object_add(c, "passed", json_object_new_boolean(*passed));
		json_object_object_add(c, "status", json_object_new_string(status));
		if (rc) {
			eval_copy_member(c, rc, "got");
			eval_copy_member(c, rc, "expected");
		} else {
			json_object_object_add(c, "got", NULL);
			json_object_object_add(c, "expected", NULL);
		}
		json_object_object_add(c, "error", rc ? str_member(rc, "error") : NULL);
		if (rc && json_object_object_get_ex(rc, "got_repr", NULL))
			json_object_object_add(c, "got_repr", str_member(rc, "got_repr"));
		if (rc && json_object_object_get_ex(rc, "expected_repr", NULL))
			json_object_object_add(c, "expected_repr", str_member(rc, "expected_repr"));
	}
	if (!rc) {
		json_object_object_add(
		    c, "error",
		    json_object_new_string("the evaluation runner gave no result for this case"));
		return c;
	}
	json_object_object_add(c, "stdout", str_member(rc, "stdout"));
	json_object_object_add(c, "stderr", str_member(rc, "stderr"));
	eval_copy_member(c, rc, "stdout_truncated");
	eval_copy_member(c, rc, "stderr_truncated");
	if (r->mode == EVAL_STDOUT)
		eval_copy_member(c, rc, "exit_code");
	if (json_object_object_get_ex(rc, "signal", &v) && v)
		json_object_object_add(c, "signal", str_member(rc, "signal"));
	if (json_object_object_get_ex(rc, "limit", &v) && v)
		json_object_object_add(c, "limit", str_member(rc, "limit"));
	json_object_object_add(c, "wall_ms", json_object_new_uint64(u64_member(rc, "wall_ms")));
	json_object_object_add(c, "cpu_ms", json_object_new_uint64(u64_member(rc, "cpu_ms")));
	json_object_object_add(c, "memory_kb", json_object_new_uint64(u64_member(rc, "memory_kb")));
	return c;
}

static void mark_skipped(struct json_object *c)
{
	static const char *const drop[] = {"got",
					   "expected",
					   "got_repr",
					   "expected_repr",
					   "stdout",
					   "stderr",
					   "stdout_truncated",
					   "stderr_truncated",
					   "exit_code",
					   "signal",
					   "limit",
					   NULL};

	for (size_t i = 0; drop[i]; i++)
		json_object_object_del(c, drop[i]);
	json_object_object_add(c, "status", json_object_new_string("skipped"));
	json_object_object_add(c, "passed", json_object_new_boolean(false));
	json_object_object_add(c, "got", NULL);
	json_object_object_add(c, "expected", NULL);
	json_object_object_add(
	    c, "error",
	    json_object_new_string("skipped: stop_on_first_failure and an earlier case failed"));
	json_object_object_add(c, "wall_ms", json_object_new_uint64(0));
	json_object_object_add(c, "cpu_ms", json_object_new_uint64(0));
	json_object_object_add(c, "memory_kb", json_object_new_uint64(0));
}

/* The Kattis-style verdict word of a finished case c (which passed or not); ce: the code did not
 * compile (a compiled language's compile step, or a Python syntax error while loading);
 * run_timeout: the whole run passed its budget without an answer (TLE). Skipped cases have none
 * (NULL). JE is reserved for checkers and interactors. */
static const char *case_verdict(struct json_object *c, bool passed, bool ce, bool run_timeout)
{
	struct json_object *v;
	const char *st = "error";

	if (json_object_object_get_ex(c, "status", &v) && json_object_is_type(v, json_type_string))
		st = json_object_get_string(v);
	if (strcmp(st, "skipped") == 0)
		return NULL;
	if (passed)
		return "AC";
	if (ce)
		return "CE";
	if (run_timeout) /* the whole run passed its budget: no case is known to have failed */
		return "TLE";
	if (strcmp(st, "ok") == 0)
		return "WA";
	if (strcmp(st, "timeout") == 0)
		return "TLE";
	if (strcmp(st, "memory_limit") == 0)
		return "MLE";
	if (strcmp(st, "output_limit") == 0)
		return "OLE";
	return "RTE"; /* error, signal, or no result */
}

/* Whether the runner's answer says the code did not compile: a compile step that failed, or
 * Python that did not parse while loading. */
bool eval_compile_failed(struct json_object *answer)
{
	struct json_object *o, *v;

	if (!answer)
		return false;
	if (json_object_object_get_ex(answer, "compile", &o) &&
	    json_object_is_type(o, json_type_object))
		return !json_object_object_get_ex(o, "status", &v) ||
		       !json_object_is_type(v, json_type_string) ||
		       strcmp(json_object_get_string(v), "ok") != 0;
	if (json_object_object_get_ex(answer, "load", &o) &&
	    json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "error", &v) &&
	    json_object_is_type(v, json_type_string)) {
		const char *e = json_object_get_string(v);

		return strncmp(e, "SyntaxError:", 12) == 0 ||
		       strncmp(e, "IndentationError:", 17) == 0 || strncmp(e, "TabError:", 9) == 0;
	}
	return false;
}

/* Judge case i (runner case rc, API case c) with the checker on the solution's stdout. As
 * judge_case(). */
static int judge_rc(struct judge *j, const struct eval_req *r, size_t i, struct json_object *rc,
		    struct json_object *c, struct api_resp *resp)
{
	struct json_object *v;
	const char *out = "";
	size_t len = 0;

	if (json_object_object_get_ex(rc, "stdout", &v) && json_object_is_type(v, json_type_string))
		out = json_object_get_string(v), len = (size_t)json_object_get_string_len(v);
	return judge_case(j, r, i, out, len, c, resp);
}

/* Decide case i from the runner's case rc (borrowed; NULL when it said nothing); why: the
 * runner's failure or "". Sends the case event when streaming. 0, or -1 with a 500 in resp (a
 * checker's sandbox run failed). */
int eval_decide_case(struct decide *d, size_t i, struct json_object *rc, bool run_timeout,
		     const char *why)
{
	const struct eval_req *r = d->r;
	struct json_object *c;
	const char *verdict;
	bool passed, skip;

	if (rc && !json_object_is_type(rc, json_type_object))
		rc = NULL;
	c = make_case(r, i, rc, &passed);
	if (why[0])
		json_object_object_add(c, "error", json_object_new_string(why));
	skip = d->first_fail != SIZE_MAX && r->stop_on_failure;
	if (skip) {
		mark_skipped(c);
	} else if (d->held && d->held[i]) {
		json_object_object_foreach(d->held[i], key, val)
		    json_object_object_add(c, key, json_object_get(val));
		passed = json_object_get_boolean(json_object_object_get(d->held[i], "passed"));
	} else if (d->judge && rc && strcmp(status_member(rc), "ok") == 0) {
		int jr = judge_rc(d->judge, r, i, rc, c, d->resp);

		if (jr < 0) {
			json_object_put(c);
			return -1;
		}
		passed = jr == 1;
	}
	if (skip)
		;
	else if (passed)
		d->passed_count++;
	else if (d->first_fail == SIZE_MAX)
		d->first_fail = i;
	if (!json_object_object_get_ex(c, "verdict", NULL)) {
		verdict = case_verdict(c, passed, d->ce, run_timeout);
		json_object_object_add(c, "verdict",
				       verdict ? json_object_new_string(verdict) : NULL);
	}
	d->done[i] = c;
	if (d->es)
		eval_stream_event(d->es, "case", c);
	return 0;
}

/* judge_cases()' on_done: a judged case is decided (and streamed) at once. Serialised. */
static int judged_one(void *arg, const struct judge_job *job)
{
	struct decide *d = arg;

	if (job->rc < 0 || d->done[job->i])
		return 0;
	if (eval_decide_case(d, job->i, json_object_array_get_idx(d->acases, job->i), false, "") <
	    0)
		return -1;
	return d->es && d->es->rs.resp->gone ? -1 : 0;
}

static int judged_tick(void *arg)
{
	struct decide *d = arg;

	return eval_stream_tick(d->es);
}

/* Without stop_on_first_failure, every case the solution finished (exit 0) can be judged at once:
 * `parallel` checker runs at a time; d->held receives one object per case (NULL for those not
 * judged) with the fields judge_case() sets. Streamed, each case is decided as its check ends
 * (and those the solution failed before any check). 0, or -1 with a 500 in d->resp. */
int eval_judge_all(struct decide *d, int parallel)
{
	const struct eval_req *r = d->r;
	struct judge_job *jobs = calloc(r->ncases, sizeof(*jobs));
	struct json_object **h = calloc(r->ncases, sizeof(*h));
	size_t n = 0;
	int rc = -1;

	d->held = h;
	if (!jobs || !h) {
		api_error(d->resp, 500, "internal_error", NULL, "Out of memory.");
		goto out;
	}
	for (size_t i = 0; i < r->ncases; i++) {
		struct json_object *rc_i = json_object_array_get_idx(d->acases, i), *v;

		if (!rc_i || !json_object_is_type(rc_i, json_type_object) ||
		    strcmp(status_member(rc_i), "ok") != 0) {
			if (d->es && !d->done[i] && eval_decide_case(d, i, rc_i, false, "") < 0)
				goto out;
			continue;
		}
		h[i] = json_object_new_object();
		jobs[n].i = i;
		jobs[n].c = h[i];
		jobs[n].out = "";
		if (json_object_object_get_ex(rc_i, "stdout", &v) &&
		    json_object_is_type(v, json_type_string)) {
			jobs[n].out = json_object_get_string(v);
			jobs[n].out_len = (size_t)json_object_get_string_len(v);
		}
		n++;
	}
	rc = judge_cases(d->judge, r, jobs, n, parallel, d->es ? judged_one : NULL,
			 d->es ? judged_tick : NULL, d, d->resp);
out:
	free(jobs);
	return rc;
}
