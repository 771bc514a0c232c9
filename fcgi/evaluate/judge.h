/* judge.h: checkers (Kattis output validators) for evaluate's `cases` mode. Private to
 * fcgi/evaluate/.
 *
 * A checker is the grader's own program. It never runs in the solution's sandbox run: each case
 * gets a sandbox run of its own whose /work is a fresh directory holding only that case's
 * `input` (the case's stdin), `answer` (its expected_stdout), an empty `feedback/` and the
 * checker program, so a checker sees no other case and none of the solution's files. It runs as
 * `checker /work/input /work/answer /work/feedback/` with the solution's stdout on its stdin
 * (never in argv or env); exit 42 = AC, 43 = WA, anything else (or a limit) = JE. A compiled
 * checker is compiled once per request, in the checker's own scratch directory. */
#ifndef SBX_FCGI_EVAL_JUDGE_H
#define SBX_FCGI_EVAL_JUDGE_H

#include "eval.h"

#define JUDGE_FEEDBACK_BYTES 4096 /* each part of a case's feedback: output, judgemessage.txt */
#define JUDGE_PROGRAM_BYTES (64u << 20) /* largest compiled checker kept */
#define JUDGE_EXIT_AC 42
#define JUDGE_EXIT_WA 43

struct judge;

/* "checker" of a /v1 evaluate body (may be absent) into r->checker. 0, or -1 with a 400 (the
 * field named as "checker" or "checker.limits.*"). Only with `cases`; never with "compare". */
int judge_parse(const struct api_req *req, struct json_object *body, struct eval_req *r,
		struct api_resp *resp);

/* Prepare r's checker: its scratch directory, its program (compiled once when its language
 * needs it). NULL with a 500 (or the store's error) in resp; otherwise the caller frees it with
 * judge_free(). A checker that does not compile is no failure here: each case then gets JE. */
struct judge *judge_open(const struct api_req *req, const struct eval_req *r,
			 struct api_resp *resp);

/* Judge case i (c: the API case object, status "ok"; borrowed): runs the checker on the
 * solution's stdout `out`, then sets c's "passed", "verdict" (AC, WA or JE) and "feedback".
 * Returns 1 if accepted, 0 if not, -1 with a 500 in resp when the sandbox itself failed. */
int judge_case(struct judge *j, const struct eval_req *r, size_t i, const char *out, size_t out_len,
	       struct json_object *c, struct api_resp *resp);

/* The checker's compile result (run-result object) or NULL when it needed none. Borrowed. */
struct json_object *judge_compile_json(const struct judge *j);

/* Remove the checker's directory and free j. NULL-safe. */
void judge_free(struct judge *j);

#endif
