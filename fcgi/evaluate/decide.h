/* decide.h: deciding an evaluation's cases from the runner's answer (decide.c). */
#ifndef SBX_EVAL_DECIDE_H
#define SBX_EVAL_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "eval.h"

struct judge;

/* An evaluation's cases as they are decided: in the final loop, or (streamed) as the runner
 * reports them, each then sent as a case event that the end event repeats unchanged. */
struct decide {
	const struct eval_req *r;
	struct json_object *acases; /* the runner's answer's cases (borrowed), or NULL */
	struct json_object **done;  /* the API case of each index once decided (owned) */
	struct json_object **ahead; /* streamed, stop_on_first_failure: runner cases that came
				       before their turn (owned) */
	struct json_object **held;  /* the checker's verdicts (judge_all), or NULL */
	size_t next;		    /* streamed, stop_on_first_failure: the next index in turn */
	size_t passed_count, first_fail;
	bool ce;
	struct judge *judge;
	struct eval_stream *es; /* NULL: not streamed */
	struct api_resp *resp;
};

/* Decide case i from the runner's case rc (borrowed; NULL when it said nothing); why: the
 * runner's failure or "". Sends the case event when streaming. 0, or -1 with a 500 in resp (a
 * checker's sandbox run failed). */
int eval_decide_case(struct decide *d, size_t i, struct json_object *rc, bool run_timeout,
		     const char *why);
/* Judge every case the solution finished at once, `parallel` checker runs at a time, into
 * d->held (streamed: each case decided as its check ends). 0, or -1 with a 500 in d->resp. */
int eval_judge_all(struct decide *d, int parallel);
/* Whether the runner's answer (borrowed, may be NULL) says the code did not compile. */
bool eval_compile_failed(struct json_object *answer);
/* dst[key] = a new reference to src[key] (null when absent). */
void eval_copy_member(struct json_object *dst, struct json_object *src, const char *key);

#endif
