/* checkhost.h: the checker's parts inside fcgi/evaluate/ (judge.c, checkhost.c, judge_util.c);
 * judge.h is what the rest of evaluate/ sees. */
#ifndef SBX_FCGI_EVAL_CHECKHOST_H
#define SBX_FCGI_EVAL_CHECKHOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "judge.h"

struct judge {
	const struct config *cfg;
	int dirfd; /* the checker's scratch directory */
	char path[4096];
	char *prog; /* the program copied into each case: source text or compiled binary */
	size_t prog_len;
	const char *prog_name; /* its file name in a case's directory */
	const struct lang *lang;
	struct json_object *compile; /* the compile's run result, or NULL */
	bool broken;		     /* did not compile: every case is JE */
	char broken_why[JUDGE_FEEDBACK_BYTES];
	uint64_t spent_ms;    /* checker wall time so far, against the server's evaluate budget */
	struct host *seq;     /* judge_case()'s check host (one thread), or NULL */
	unsigned hosts;	      /* check hosts started (their directories' names), under lock */
	pthread_mutex_t lock; /* spent_ms, when cases are judged from several threads */
};

/* A lane's check host (checkhost.c says what it guarantees). Zeroed, then host_init(). */
struct host {
	struct judge *j;
	bool tried, alive;
	char name[32]; /* its directory in j->dirfd: the run's /work */
	int dirfd, cmd_fd, res_fd, cancel_w;
	unsigned seq;
	char line[512];
	size_t have;
	char why[192]; /* how the run ended, once stopped */
	/* the run, from a thread of its own */
	pthread_t th;
	bool th_started;
	bool done; /* the run has ended (set by its thread) */
	const char *argv[8];
	struct sbx_request req;
	struct sbx_result res;
	int rc;
};

/* h as a lane's host not yet tried (no descriptors held). */
void host_init(struct host *h);

/* Start h's run (once per lane) for j's checks of r. false: no host (per-check runs judge). */
bool host_start(struct host *h, struct judge *j, const struct eval_req *r);

/* Case i through the host: as judge_case() (1, 0, or -1 with *err and msg), or -2 when the host
 * could not take the case (nothing of it ran: judge it with a run of its own). */
int host_check(struct host *h, const struct eval_req *r, size_t i, const char *out, size_t out_len,
	       struct json_object *c, int *err, char *msg, size_t msglen);

/* End the host's run (at once when kill, else after it saw end of file) and free what it held. */
void host_stop(struct host *h, bool kill);

/* judge_util.c */
uint64_t judge_now_ms(void); /* CLOCK_MONOTONIC */
/* Mark c as judged: verdict (exit_ok 0 JE, 1 AC, 2 WA), passed, feedback (taken). 1 if AC. */
int judge_set_verdict(struct json_object *c, int exit_ok, struct json_object *feedback);
/* What is left of the request's checker budget (the server's evaluate wall_ms), and spending it. */
uint64_t judge_left_ms(struct judge *j);
void judge_spend(struct judge *j, uint64_t ms);

#endif
