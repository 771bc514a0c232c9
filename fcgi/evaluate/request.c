/* request.c: checking an evaluate request (POST /v1/evaluate and the session's) into a struct
 * eval_req before anything runs: the case style, the cases themselves, compare and isolation,
 * the language and the limits. Every refusal is a 400 naming the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval.h"
#include "judge.h"

int eval_parse_isolation(struct json_object *body, struct eval_req *r, bool dflt,
			 struct api_resp *resp)
{
	const char *iso = NULL;

	if (api_get_string(body, "isolation", false, &iso, NULL, resp) < 0)
		return -1;
	r->namespace = dflt;
	if (!iso)
		return 0;
	if (strcmp(iso, "process") != 0 && strcmp(iso, "namespace") != 0) {
		api_error(resp, 400, "invalid_value", "isolation",
			  "isolation must be \"process\" or \"namespace\".");
		return -1;
	}
	r->namespace = strcmp(iso, "namespace") == 0;
	if (r->namespace && r->mode == EVAL_STDOUT) {
		api_error(resp, 400, "invalid_request", "isolation",
			  "isolation \"namespace\" applies to io_cases and test (Python) only.");
		return -1;
	}
	return 0;
}

int eval_parallelism(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > EVAL_MAX_PARALLEL ? EVAL_MAX_PARALLEL : (int)n;
}

/* "compare": a mode name or {"float_tolerance": x}. 0 or -1 with a 400. */
static int parse_compare(struct json_object *v, struct cmp_spec *out, struct api_resp *resp)
{
	struct json_object *tol;

	out->mode = CMP_LINES;
	out->tolerance = 0;
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_string)) {
		/* a NUL inside would make "exact\u0000x" read as "exact" */
		if (strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v) &&
		    cmp_mode_from_name(json_object_get_string(v), &out->mode) == 0)
			return 0;
	} else if (json_object_is_type(v, json_type_object) && json_object_object_length(v) == 1 &&
		   json_object_object_get_ex(v, "float_tolerance", &tol) &&
		   (json_object_is_type(tol, json_type_double) ||
		    json_object_is_type(tol, json_type_int))) {
		out->mode = CMP_FLOAT;
		out->tolerance = json_object_get_double(tol);
		if (out->tolerance >= 0 && out->tolerance < 1e300)
			return 0;
	}
	api_error(resp, 400, "invalid_value", "compare",
		  "compare must be \"exact\", \"lines\", \"tokens\" or {\"float_tolerance\": x} "
		  "with x >= 0.");
	return -1;
}

/* Check each case object of io_cases (strict: only input and output) or cases. */
int eval_check_cases(struct json_object *arr, enum eval_mode mode, bool strict,
		     struct api_resp *resp)
{
	static const char *const io_fields[] = {"input", "output", NULL};
	static const char *const std_fields[] = {"stdin", "expected_stdout", "args", NULL};
	const char *name = mode == EVAL_IO ? "io_cases" : "cases";
	size_t n = json_object_array_length(arr);
	char field[64];

	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *v;

		snprintf(field, sizeof(field), "%s[%zu]", name, i);
		if (!json_object_is_type(c, json_type_object)) {
			api_error(resp, 400, "invalid_type", field, "%s must be an object.", field);
			return -1;
		}
		if (strict &&
		    api_only_fields(c, mode == EVAL_IO ? io_fields : std_fields, resp) < 0)
			return -1;
		if (mode == EVAL_IO) {
			if (strict && !json_object_object_get_ex(c, "input", NULL)) {
				api_error(resp, 400, "missing_field", field,
					  "%s needs an \"input\".", field);
				return -1;
			}
			if (json_object_object_get_ex(c, "input", &v) && v &&
			    !json_object_is_type(v, json_type_string) &&
			    !json_object_is_type(v, json_type_object) &&
			    !json_object_is_type(v, json_type_array)) {
				api_error(
				    resp, 400, "invalid_type", field,
				    "%s.input must be a string (name=value pairs or a literal), an "
				    "object or an array.",
				    field);
				return -1;
			}
			continue;
		}
		if ((json_object_object_get_ex(c, "stdin", &v) &&
		     !json_object_is_type(v, json_type_string)) ||
		    (json_object_object_get_ex(c, "expected_stdout", &v) &&
		     !json_object_is_type(v, json_type_string))) {
			api_error(resp, 400, "invalid_type", field,
				  "%s.stdin and %s.expected_stdout must be strings.", field, field);
			return -1;
		}
		if (json_object_object_get_ex(c, "args", &v)) {
			size_t na = json_object_is_type(v, json_type_array)
					? json_object_array_length(v)
					: 0;

			if (!json_object_is_type(v, json_type_array) || na > 64) {
				api_error(resp, 400, "invalid_type", field,
					  "%s.args must be an array of at most 64 strings.", field);
				return -1;
			}
			for (size_t j = 0; j < na; j++) {
				if (!json_object_is_type(json_object_array_get_idx(v, j),
							 json_type_string)) {
					api_error(resp, 400, "invalid_type", field,
						  "%s.args must hold strings.", field);
					return -1;
				}
			}
		}
	}
	return 0;
}

/* Parse a /v1 evaluate body into r. 0 or -1 with a 400. */
int eval_parse_v1(const struct api_req *req, struct json_object *body, struct eval_req *r,
		  struct api_resp *resp)
{
	static const char *const fields[] = {
	    "language", "code",	     "entry_point", "io_cases",
	    "cases",	"test",	     "compare",	    "stop_on_first_failure",
	    "limits",	"isolation", "checker",	    "interactor",
	    "packages", "stream",    NULL};
	struct json_object *io = NULL, *cases = NULL, *limits = NULL, *cmp = NULL;
	const char *lname = "python";
	int have_io, have_cases, have_test, have_ep;

	memset(r, 0, sizeof(*r));
	if (api_only_fields(body, fields, resp) < 0 ||
	    api_get_string(body, "language", false, &lname, NULL, resp) < 0 ||
	    api_get_string(body, "code", true, &r->code, NULL, resp) < 0 ||
	    (have_ep = api_get_string(body, "entry_point", false, &r->entry_point, NULL, resp)) <
		0 ||
	    (have_io = api_get_array(body, "io_cases", &io, resp)) < 0 ||
	    (have_cases = api_get_array(body, "cases", &cases, resp)) < 0 ||
	    (have_test = api_get_string(body, "test", false, &r->test, NULL, resp)) < 0 ||
	    api_get_bool(body, "stop_on_first_failure", &r->stop_on_failure, resp) < 0 ||
	    api_get_bool(body, "stream", &r->stream, resp) < 0 ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    api_get_array(body, "packages", &r->packages, resp) < 0)
		return -1;
	r->layer_fd = -1;
	json_object_object_get_ex(body, "compare", &cmp);
	r->lang = config_lang(req->cfg, lname);
	if (!r->lang) {
		api_error(resp, 400, "unknown_language", "language",
			  "Unknown language \"%.64s\"; GET /v1/languages lists them.", lname);
		return -1;
	}
	if ((have_io == 0) + (have_cases == 0) + (have_test == 0) != 1) {
		api_error(resp, 400, "invalid_request", "io_cases",
			  "Give exactly one of io_cases, cases or test.");
		return -1;
	}
	r->mode = have_io == 0 ? EVAL_IO : have_cases == 0 ? EVAL_STDOUT : EVAL_TEST;
	if (r->mode != EVAL_STDOUT && !eval_is_python(r->lang)) {
		api_error(resp, 400, "invalid_request", "language",
			  "io_cases and test are for Python; use cases (stdin/expected_stdout) for "
			  "%s.",
			  r->lang->id);
		return -1;
	}
	if (r->mode != EVAL_STDOUT && have_ep != 0) {
		api_error(resp, 400, "missing_field", "entry_point",
			  "entry_point (the function to call) is required with io_cases and test.");
		return -1;
	}
	if (cmp && r->mode != EVAL_STDOUT) {
		api_error(resp, 400, "invalid_request", "compare",
			  "compare applies to cases (stdout comparison) only.");
		return -1;
	}
	if (parse_compare(cmp, &r->cmp, resp) < 0 || eval_parse_isolation(body, r, false, resp) < 0)
		return -1;
	r->cases = r->mode == EVAL_IO ? io : r->mode == EVAL_STDOUT ? cases : NULL;
	r->ncases = r->cases ? json_object_array_length(r->cases) : 1;
	if (r->cases && r->ncases == 0) {
		api_error(resp, 400, "invalid_value", r->mode == EVAL_IO ? "io_cases" : "cases",
			  "Give at least one case.");
		return -1;
	}
	if (r->ncases > req->cfg->max_cases) {
		api_error(resp, 400, "too_many_cases", r->mode == EVAL_IO ? "io_cases" : "cases",
			  "%zu cases; the maximum per request is %u.", r->ncases,
			  req->cfg->max_cases);
		return -1;
	}
	if (r->cases && eval_check_cases(r->cases, r->mode, true, resp) < 0)
		return -1;
	if (run_parse_limits(req->cfg, r->lang, limits, &r->limits, resp) < 0)
		return -1;
	return judge_parse(req, body, r, resp);
}

/* A NULL-terminated argv as a JSON array (NULL argv: empty). Caller owns the result. */
