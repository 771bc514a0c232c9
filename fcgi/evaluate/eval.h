/* eval.h: what evaluate.c (running a request) and request.c (checking one) share inside
 * fcgi/evaluate/: the parsed request and the limits of the job. Not for other folders. */
#ifndef SBX_FCGI_EVAL_H
#define SBX_FCGI_EVAL_H

#include <pthread.h>
#include <string.h>

#include "compare.h"
#include "../handlers/handlers.h"

#define EVAL_RUNNER "/opt/sbx/evaluate.py"
#define EVAL_PYTHON "/usr/bin/python3"
#define EVAL_CHECK_WRAPPER "/opt/sbx/check.py" /* a Python checker's run (runner/check.py) */
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
	bool stream;	/* "stream": true: NDJSON events as cases end (events.c) */
	struct sbx_limits limits;
	struct eval_prog checker;     /* "checker" (judge.h), cases mode only */
	struct eval_prog interactor;  /* "interactor" (interact.c), cases mode only */
	struct json_object *packages; /* "packages" (a package set's names), or NULL */
	int layer_fd;		      /* its layer (packages.h), opened by the handler, or -1 */
	const char *layer_env;	      /* the runner's environment entry for it, or NULL */
	struct json_object *compiled; /* the solution compiled (or found cached) by compile.c */
};

/* A streamed evaluation (events.c): the NDJSON answer in progress and the runner's output read
 * line by line. */
struct eval_stream {
	struct run_stream rs;	  /* the answer (its request and response) */
	struct sbx_run_spec spec; /* the run's id (the start event's run_id) and owner */
	struct api_resp answer;	  /* what the end event will carry (the usual answer) */
	pthread_mutex_t lock;	  /* one event at a time (checkers are judged from threads) */
	char *line;		  /* a line of the runner's stdout not ended yet */
	size_t line_len, line_cap;
	/* A whole line of the runner's stdout (no newline); nonzero cancels the run. */
	int (*on_line)(void *arg, const char *line, size_t len);
	void *arg;
};

/* Start the NDJSON answer on resp with its start event (a new run id owned by req's client, in
 * session: may be NULL). 0, or -1 with an error in resp (nothing sent). es->answer is then the
 * response to fill. */
int eval_stream_begin(struct eval_stream *es, const struct api_req *req, struct api_resp *resp,
		      const char *session);
/* One event {"type": type, ...obj's members} (obj borrowed, may be NULL). 0, or -1 once the
 * client is gone. Any thread. */
int eval_stream_event(struct eval_stream *es, const char *type, struct json_object *obj);
/* A keepalive when nothing was sent for a while. 0, or -1 once the client is gone. Any thread. */
int eval_stream_tick(struct eval_stream *es);
/* Append len bytes to the pending line. 0 or -1 (too long, out of memory). */
int eval_stream_keep(struct eval_stream *es, const char *data, size_t len);
/* The end event from es->answer, then free what es holds. */
void eval_stream_end(struct eval_stream *es);
/* The runner's sandbox run with its stdout handed to es->on_line line by line as it comes; in
 * (the job) on its stdin. As run_sandboxed(): 0 with res filled, or -1 with a 500/503 in resp
 * (also when the client went away: the run was cancelled). */
int eval_runner_run(const struct config *cfg, int dirfd, int layer_fd, const char *const *env,
		    const char *const *argv, const char *in, size_t in_len,
		    const struct sbx_limits *lim, struct eval_stream *es, struct sbx_result *res,
		    struct api_resp *resp);

/* "isolation" (absent: dflt): 0, or -1 with a 400. "namespace" is for the Python modes only. */
int eval_parse_isolation(struct json_object *body, struct eval_req *r, bool dflt,
			 struct api_resp *resp);
/* Cases run at once: the cores, at most EVAL_MAX_PARALLEL. */
int eval_parallelism(void);
/* Whether a language runs the Python runner's own modes (io_cases, test, fork of the loaded code).
 */
static inline bool eval_is_python(const struct lang *l)
{
	return l && strcmp(l->id, "python") == 0;
}
/* A /v1 evaluate body into r (strings borrowed from body). 0, or -1 with a 400 in resp. */
int eval_parse_v1(const struct api_req *req, struct json_object *body, struct eval_req *r,
		  struct api_resp *resp);

/* Check each case object of io_cases (strict: only input and output) or cases. */
int eval_check_cases(struct json_object *arr, enum eval_mode mode, bool strict,
		     struct api_resp *resp);

#endif
