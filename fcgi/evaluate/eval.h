/* eval.h: what evaluate.c (running a request) and request.c (checking one) share inside
 * fcgi/evaluate/: the parsed request and the limits of the job. Not for other folders. */
#ifndef SBX_FCGI_EVAL_H
#define SBX_FCGI_EVAL_H

#include "compare.h"
#include "../handlers/handlers.h"

#define EVAL_RUNNER "/opt/sbx/evaluate.py"
#define EVAL_PYTHON "/usr/bin/python3"
#define EVAL_MAX_PARALLEL 8
#define EVAL_GRACE_MS 5000 /* runner start-up and answer, past the request's budget */
#define EVAL_RUNNER_MEMORY (192ull << 20) /* supervisor + worker + compiler overhead */
#define EVAL_ANSWER_BYTES (48ull << 20)	  /* largest runner answer kept (stdout of the run) */
#define EVAL_HINT 256
#define EVAL_CASE_OVERHEAD_MS 500 /* per wave of cases: fork, exec, reaping, on a loaded host */
#define EVAL_COMPILE_MS 30000	  /* the runner's compile step's wall limit (sbx_eval.py) */
#define EVAL_ANSWER_DEPTH 64 /* the runner nests values 32 deep at most (sbx_pycase.MAX_DEPTH) */

enum eval_mode { EVAL_IO, EVAL_TEST, EVAL_STDOUT };

/* A grader's own program (a checker or an interactor); strings borrowed from the body. */
struct eval_prog {
	const struct lang *lang; /* NULL: none given */
	const char *code;
	struct sbx_limits limits; /* its own limits ("checker.limits"), never the solution's */
};

/* One parsed request; strings and arrays are borrowed from the body. */
struct eval_req {
	enum eval_mode mode;
	const struct lang *lang;
	const char *code;
	const char *entry_point;
	const char *test;
	struct json_object *cases; /* io_cases or cases; NULL in test mode */
	size_t ncases;
	struct cmp_spec cmp;
	bool stop_on_failure;
	bool namespace; /* "isolation": "namespace": one process, fresh module globals per case */
	struct sbx_limits limits;
	struct eval_prog checker;     /* "checker" (judge.h), cases mode only */
	struct eval_prog interactor;  /* "interactor" (interact.c), cases mode only */
	struct json_object *packages; /* "packages" (a package set's names), or NULL */
	int layer_fd;		      /* its layer (packages.h), opened by the handler, or -1 */
	const char *layer_env;	      /* the runner's environment entry for it, or NULL */
};

/* "isolation" (absent: dflt): 0, or -1 with a 400. "namespace" is for the Python modes only. */
int eval_parse_isolation(struct json_object *body, struct eval_req *r, bool dflt,
			 struct api_resp *resp);
/* Cases run at once: the cores, at most EVAL_MAX_PARALLEL. */
int eval_parallelism(void);
/* Whether a language runs the Python runner's own modes (io_cases, test, fork of the loaded code).
 */
bool eval_is_python(const struct lang *l);
/* A /v1 evaluate body into r (strings borrowed from body). 0, or -1 with a 400 in resp. */
int eval_parse_v1(const struct api_req *req, struct json_object *body, struct eval_req *r,
		  struct api_resp *resp);

/* Check each case object of io_cases (strict: only input and output) or cases. */
int eval_check_cases(struct json_object *arr, enum eval_mode mode, bool strict,
		     struct api_resp *resp);

#endif
