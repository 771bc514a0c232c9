/* judge.h: checkers (Kattis output validators) for evaluate's `cases` mode. Private to
 * fcgi/evaluate/.
 *
 * A checker is the grader's own program. It never runs in the solution's sandbox run: each check
 * sees a /work holding only that case's `input` (the case's stdin), `answer` (its
 * expected_stdout), an empty `feedback/` and the checker program, so a checker sees no other
 * case and none of the solution's files. It runs as
 * `checker /work/input /work/answer /work/feedback/` with the solution's stdout on its stdin
 * (never in argv or env); exit 42 = AC, 43 = WA, anything else (or a limit) = JE. A compiled
 * checker is compiled once per request, in the checker's own scratch directory. A Python checker
 * runs through the runner's check.py, in the runner's own interpreter form, with the semantics
 * of `python3 -u main.py` (runner/check.py says why: the slots' pre-started interpreters).
 *
 * Where checks run: a lane of judge_cases() (and judge_case()'s caller) holds ONE checker
 * sandbox run, the check host (runner/check.py --host; checkhost.c), which forks each
 * check with exactly the view above (/work emptied and refilled with the case's files, the same
 * argv and cwd) and its own limits, then kills and reaps every process but itself, empties /tmp,
 * /dev/shm and System V IPC before it reports. A checker parses the solution's output, which the
 * submission controls: a checker with a parsing bug can be taken over. What the host guarantees
 * against such a check: it cannot outlive its check (the host is a subreaper and kills all), it
 * finds nothing of an earlier check, it cannot reach the channel (FIFOs unlinked before the
 * first check, the host not dumpable) so only the host's report gives a verdict, and if it
 * kills or stops the host, its case is JE (end of file or the deadline) and the lane's later
 * cases get a sandbox run each (judge_one's own path, also used when no host can start). It
 * shares a uid, a cgroup and a pid namespace with the host while it runs: it can slow the host
 * (setpriority, sched_setaffinity) for the rest of its own request, nothing more. */
#ifndef SBX_FCGI_EVAL_JUDGE_H
#define SBX_FCGI_EVAL_JUDGE_H

#include "eval.h"

#define JUDGE_FEEDBACK_BYTES 4096 /* each part of a case's feedback: output, judgemessage.txt */
#define JUDGE_PROGRAM_BYTES (64u << 20) /* largest compiled checker kept */
#define JUDGE_EXIT_AC 42
#define JUDGE_EXIT_WA 43

/* Evaluate r (cases with an interactor, interact.c): every case a pair of sandbox runs, the
 * solution's and the interactor's, at once, joined by FIFOs. es (may be NULL): each case is sent
 * as an event when it ends, keepalives meanwhile, and a client that goes cancels. The /v1
 * answer, or NULL with a 500 (or 4xx) in resp. Caller owns the result. */
struct json_object *interact_run(const struct api_req *req, const struct eval_req *r,
				 struct eval_stream *es, struct api_resp *resp);

struct judge;

/* "checker" and "interactor" of a /v1 evaluate body (each may be absent) into r. 0, or -1 with
 * a 400 (the field named as "checker" or "checker.limits.*"). Only with `cases`; never with
 * "compare" or with each other. */
int judge_parse(const struct api_req *req, struct json_object *body, struct eval_req *r,
		struct api_resp *resp);

/* Prepare a program p (a checker, an interactor, or a solution run outside the runner): its
 * scratch directory, its program (compiled once when its language needs it). NULL with a 500 (or
 * the store's error) in resp; otherwise the caller frees it with judge_free(). A program that
 * does not compile is no failure here: judge_broken() then says why. */
struct judge *judge_open(const struct api_req *req, const struct eval_prog *p,
			 struct api_resp *resp);

/* Whether j did not compile (*why: the reason, borrowed from j). */
bool judge_broken(const struct judge *j, const char **why);

/* Write j's program (source or binary) into dirfd, a directory this process made. 0 or -errno. */
int judge_put(const struct judge *j, int dirfd);

/* A case's `input`, `answer` and empty `feedback/` in dirfd, from the request's case src. 0 or
 * -errno. */
int judge_case_files(int dirfd, struct json_object *src);

/* argv of j's run in a directory judge_put() filled: its language's run template with {file}
 * the program and {args} the nargs args. Pointers borrowed from j, its language and args. */
void judge_argv(const struct judge *j, const char *const *args, size_t nargs, const char **argv,
		size_t max);

/* At most max bytes of the regular file name in dirfd (never following a link, never blocking on
 * a FIFO) into a new buffer (*out, NUL-terminated; caller frees). 0, -ENOENT when absent, or
 * another -errno (-EFBIG: larger than max and trunc is false). */
int judge_read_file(int dirfd, const char *name, size_t max, bool trunc, char **out, size_t *len);

/* The Kattis arguments: /work/input, /work/answer, /work/feedback/. */
extern const char *const judge_kattis_args[3];

/* A case's feedback: o and e (each capped at JUDGE_FEEDBACK_BYTES) then casefd's
 * feedback/judgemessage.txt (capped, read without following links). Caller owns the result. */
struct json_object *judge_feedback(int casefd, const char *o, size_t o_len, const char *e,
				   size_t e_len);

/* Judge case i (c: the API case object, status "ok"; borrowed): runs the checker on the
 * solution's stdout `out`, then sets c's "passed", "verdict" (AC, WA or JE) and "feedback".
 * Returns 1 if accepted, 0 if not, -1 with a 500 in resp when the sandbox itself failed. */
int judge_case(struct judge *j, const struct eval_req *r, size_t i, const char *out, size_t out_len,
	       struct json_object *c, struct api_resp *resp);

/* One case for judge_cases(): in i, out/out_len (the solution's stdout, borrowed), c (the
 * object the verdict goes into, borrowed); out rc as judge_case(), err/msg on a failure. */
struct judge_job {
	size_t i;
	const char *out;
	size_t out_len;
	struct json_object *c;
	int rc, err;
	char msg[256];
};

/* judge_case() for n jobs, up to `parallel` checker runs at once (threads of this worker; each
 * job's c is touched by one thread only). on_done (may be NULL) is called with arg for each job
 * as it ends, one call at a time; on_tick (NULL: none) about every second from this thread while
 * checks run. Either returning nonzero stops the jobs not started (their rc -1, err
 * -ECANCELED). 0, or -1 with a 500/503 in resp when a run failed. */
int judge_cases(struct judge *j, const struct eval_req *r, struct judge_job *jobs, size_t n,
		int parallel, int (*on_done)(void *arg, const struct judge_job *job),
		int (*on_tick)(void *arg), void *arg, struct api_resp *resp);

/* The checker's compile result (run-result object) or NULL when it needed none. Borrowed. */
struct json_object *judge_compile_json(const struct judge *j);

/* Remove the checker's directory and free j. NULL-safe. */
void judge_free(struct judge *j);

#endif
