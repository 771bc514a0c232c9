/* judge.c: the checker of evaluate's `cases` mode (judge.h says what a checker sees).
 *
 * Layout of the checker's scratch directory (a fresh one per request, never the solution's):
 *   <source_file>, main      the checker's code and, for a compiled language, its binary
 *   c<i>/                     case i: /work of that case's checker run of its own (when no
 *                             check host judges it), removed as soon as the case is judged
 *   h<n>/                     /work of a check host's run (below): emptied and refilled with
 *                             one case's files (as c<i>/, and .sbx_team: the solution's output;
 *                             .sbx_out, .sbx_err: what the check printed) before each check
 *     input answer            the case's stdin and expected_stdout, written by this file
 *     feedback/               empty; judgemessage.txt is read back from it
 *     <program>               a copy of the checker (its source, or the compiled binary)
 * The host writes a case's directory before its run and reads back only feedback/judgemessage.txt
 * after it, through descriptors opened with O_NOFOLLOW (the checker may have replaced anything). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "checkhost.h"

/* One grader program member `name` of body into *p (lang NULL when absent). 0 or -1 with a 400
 * whose field names the member ("checker.limits.wall_ms"). */
static int parse_prog(const struct api_req *req, struct json_object *body, const char *name,
		      struct eval_prog *p, struct api_resp *resp)
{
	static const char *const fields[] = {"language", "code", "limits", NULL};
	struct json_object *o = NULL, *limits = NULL;
	const char *lname = NULL;
	int have;

	memset(p, 0, sizeof(*p));
	have = api_get_object(body, name, &o, resp);
	if (have != 0)
		return have < 0 ? -1 : 0;
	if (api_only_fields(o, fields, resp) < 0 ||
	    api_get_string(o, "language", true, &lname, NULL, resp) < 0 ||
	    api_get_string(o, "code", true, &p->code, NULL, resp) < 0 ||
	    api_get_object(o, "limits", &limits, resp) < 0)
		goto named;
	p->lang = config_lang(req->cfg, lname);
	if (!p->lang) {
		api_error(resp, 400, "unknown_language", NULL,
			  "Unknown %s language \"%.64s\"; GET /v1/languages lists them.", name,
			  lname);
		goto named_language;
	}
	if (run_parse_limits(req->cfg, p->lang, limits, &p->limits, resp) < 0)
		goto named;
	return 0;
named_language:
	json_object_object_add(json_object_object_get(resp->json, "error"), "field",
			       json_object_new_string("language"));
named:
	/* The getters name the member alone ("code", "limits.wall_ms"): say whose it is. */
	if (resp->json) {
		struct json_object *err, *f;

		if (json_object_object_get_ex(resp->json, "error", &err) &&
		    json_object_object_get_ex(err, "field", &f) &&
		    json_object_is_type(f, json_type_string)) {
			char full[128];

			snprintf(full, sizeof(full), "%s.%s", name, json_object_get_string(f));
			json_object_object_add(err, "field", json_object_new_string(full));
		}
	}
	p->lang = NULL;
	return -1;
}

int judge_parse(const struct api_req *req, struct json_object *body, struct eval_req *r,
		struct api_resp *resp)
{
	struct json_object *cmp = NULL;

	if (parse_prog(req, body, "checker", &r->checker, resp) < 0 ||
	    parse_prog(req, body, "interactor", &r->interactor, resp) < 0)
		return -1;
	if (!r->checker.lang && !r->interactor.lang)
		return 0;
	if (r->checker.lang && r->interactor.lang) {
		api_error(resp, 400, "invalid_request", "interactor",
			  "Give either checker or interactor: the interactor judges the case.");
		return -1;
	}
	if (r->mode != EVAL_STDOUT) {
		api_error(resp, 400, "invalid_request", r->checker.lang ? "checker" : "interactor",
			  "%s applies to cases (stdin/expected_stdout) only.",
			  r->checker.lang ? "checker" : "interactor");
		return -1;
	}
	if (json_object_object_get_ex(body, "compare", &cmp)) {
		api_error(resp, 400, "invalid_request", "compare",
			  "Give either compare or %s: it does the comparison.",
			  r->checker.lang ? "checker" : "interactor");
		return -1;
	}
	return 0;
}

/* Compile the checker in j's directory; on success keep the binary in j->prog. -1 with a 500 in
 * resp only when the sandbox or the host failed. */
static int compile_checker(const struct api_req *req, struct judge *j, const struct eval_prog *p,
			   struct api_resp *resp)
{
	const char *argv[64];
	struct sbx_limits lim;
	struct sbx_result res;
	size_t n = 0;
	int rc;

	for (char *const *t = p->lang->compile; *t && n + 1 < 64; t++)
		argv[n++] = strcmp(*t, "{file}") == 0 ? p->lang->source_file : *t;
	argv[n] = NULL;
	/* The compiler gets the server's defaults, as /v1/execute's does. */
	if (run_parse_limits(j->cfg, p->lang, NULL, &lim, resp) < 0)
		return -1;
	/* Through the client's compile cache (compile.c): a hit places the binary, runs nothing. */
	if (eval_compile(req, j->dirfd, p->lang, argv, &lim, &res, &j->compile, resp) < 0)
		return -1;
	if (res.status != SBX_OK) {
		snprintf(j->broken_why, sizeof(j->broken_why),
			 "the checker did not compile (%s): %.*s", sbx_status_name(res.status),
			 (int)(res.err_len > 3000 ? 3000 : res.err_len), res.err);
		j->broken = true;
		sbx_result_free(&res);
		return 0;
	}
	sbx_result_free(&res);
	/* The compiler ran in a directory only it could write: still, never follow a link. */
	rc = judge_read_file(j->dirfd, "main", JUDGE_PROGRAM_BYTES, false, &j->prog, &j->prog_len);
	if (rc < 0) {
		snprintf(j->broken_why, sizeof(j->broken_why),
			 "the checker's compiled program could not be read: %s", strerror(-rc));
		j->broken = true;
	}
	j->prog_name = "main";
	return 0;
}

struct judge *judge_open(const struct api_req *req, const struct eval_prog *p,
			 struct api_resp *resp)
{
	struct judge *j = calloc(1, sizeof(*j));
	struct store_err e = {0};
	int rc;

	if (!j) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory.");
		return NULL;
	}
	j->cfg = req->cfg;
	j->lang = p->lang;
	pthread_mutex_init(&j->lock, NULL);
	j->dirfd = scratch_create(h_store(req->cfg), j->path, sizeof(j->path), &e);
	if (j->dirfd < 0) {
		h_store_error(resp, &e, NULL);
		free(j);
		return NULL;
	}
	rc = eval_put_file(j->dirfd, p->lang->source_file, p->code, strlen(p->code), 0644);
	if (rc < 0) {
		api_error(resp, 500, "internal_error", NULL,
			  "The checker could not be written: %s.", strerror(-rc));
		goto fail;
	}
	if (p->lang->compile) {
		if (compile_checker(req, j, p, resp) < 0)
			goto fail;
		return j;
	}
	j->prog_name = p->lang->source_file;
	j->prog_len = strlen(p->code);
	j->prog = strdup(p->code);
	if (!j->prog) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory.");
		goto fail;
	}
	return j;
fail:
	judge_free(j);
	return NULL;
}

bool judge_broken(const struct judge *j, const char **why)
{
	*why = j->broken_why;
	return j->broken;
}

/* Case i's directory: c<i>/ with input, answer, feedback/ and the program. Its fd, or -errno. */
static int case_dir(struct judge *j, const struct eval_req *r, size_t i)
{
	char name[32];
	int fd = -1, rc;

	snprintf(name, sizeof(name), "c%zu", i);
	if (mkdirat(j->dirfd, name, 0755) < 0)
		return -errno;
	fd = openat(j->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((rc = judge_case_files(fd, json_object_array_get_idx(r->cases, i))) < 0 ||
	    (rc = judge_put(j, fd)) < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* One run through the broker for a thread of this worker (run_sandboxed() keeps per-request
 * counters and fills a response: not for threads). Waits for a slot up to the server's queue
 * wait. 0 with res filled, or -errno (-EAGAIN: no slot) with res freed and msg set. */
static int broker_run(const struct config *cfg, int dirfd, const char *const *argv, const char *in,
		      size_t in_len, const struct sbx_limits *lim, struct sbx_result *res,
		      char *msg, size_t msglen)
{
	struct sbx_request req;
	uint64_t t0 = judge_now_ms();
	int in_fd = -1, rc;

	memset(res, 0, sizeof(*res));
	if (in_len) {
		in_fd = memfd_create("sbx-checker-stdin", MFD_CLOEXEC);
		if (in_fd < 0) {
			rc = -errno;
			snprintf(msg, msglen, "memfd: %s", strerror(errno));
			return rc;
		}
		if ((rc = eval_write_all(in_fd, in, in_len)) < 0) {
			snprintf(msg, msglen, "stdin: %s", strerror(-rc));
			close(in_fd);
			return rc;
		}
	}
	memset(&req, 0, sizeof(req));
	req.argv = argv;
	req.workdir_fd = dirfd;
	req.stdin_fd = in_fd;
	req.cancel_fd = -1;
	req.limits = *lim;
	for (;;) {
		rc = sbx_client_run(cfg->broker_socket, &req, res);
		if (rc != -EAGAIN || judge_now_ms() - t0 > cfg->queue_wait_ms)
			break;
		sbx_result_free(res);
		nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
	}
	if (in_fd >= 0)
		close(in_fd);
	if (rc == 0 && res->status == SBX_INTERNAL_ERROR)
		rc = -EIO;
	if (rc < 0) {
		snprintf(msg, msglen, "%s", res->message[0] ? res->message : "no detail");
		sbx_result_free(res);
	}
	return rc;
}

/* argv of a check: the language's run form, except for Python, which runs through the runner's
 * check.py in the runner's own form (runner/check.py says why: the slots' pre-started
 * interpreters are then shared with the runner instead of turned over at every check). */
static void check_argv(const struct judge *j, const char **argv, size_t max)
{
	if (eval_is_python(j->lang) && max > 8) {
		argv[0] = EVAL_PYTHON;
		argv[1] = "-S";
		argv[2] = "-B";
		argv[3] = EVAL_CHECK_WRAPPER;
		argv[4] = j->prog_name;
		for (size_t k = 0; k < 3; k++)
			argv[5 + k] = judge_kattis_args[k];
		argv[8] = NULL;
		return;
	}
	judge_argv(j, judge_kattis_args, 3, argv, max);
}

/* judge_case() for any thread: on a sandbox failure returns -1 with *err (-errno) and msg. */
static int judge_one(struct judge *j, struct host *h, const struct eval_req *r, size_t i,
		     const char *out, size_t out_len, struct json_object *c, int *err, char *msg,
		     size_t msglen)
{
	const char *argv[64];
	struct sbx_limits lim = r->checker.limits;
	struct sbx_result res;
	uint64_t t0, left;
	int fd = -1, rc = -1, verdict = 0;
	char why[256];

	memset(&res, 0, sizeof(res));
	if (j->broken)
		return judge_set_verdict(c, 0, json_object_new_string(j->broken_why));
	if (h && !h->tried)
		host_start(h, j, r);
	if (h && h->alive) {
		rc = host_check(h, r, i, out, out_len, c, err, msg, msglen);
		if (rc != -2)
			return rc;
		rc = -1;
	}
	/* All checker runs of a request together stay within the server's evaluate budget. */
	left = judge_left_ms(j);
	if (left < 100)
		return judge_set_verdict(
		    c, 0,
		    json_object_new_string("the checkers of this request ran out "
					   "of the server's evaluate wall_ms"));
	if (lim.wall_ms > left)
		lim.wall_ms = left;
	fd = case_dir(j, r, i);
	if (fd < 0) {
		*err = fd;
		snprintf(msg, msglen, "the checker's files for case %zu: %s", i, strerror(-fd));
		return -1;
	}
	check_argv(j, argv, sizeof(argv) / sizeof(argv[0]));
	t0 = judge_now_ms();
	*err = broker_run(j->cfg, fd, argv, out, out_len, &lim, &res, msg, msglen);
	if (*err < 0)
		goto out;
	judge_spend(j, judge_now_ms() - t0);
	if (res.status == SBX_OK || res.status == SBX_ERROR) {
		if (res.exit_code == JUDGE_EXIT_AC)
			verdict = 1;
		else if (res.exit_code == JUDGE_EXIT_WA)
			verdict = 2;
	}
	rc = judge_set_verdict(c, verdict,
			       judge_feedback(fd, res.out, res.out_len, res.err, res.err_len));
	if (verdict == 0) {
		if (res.status == SBX_OK || res.status == SBX_ERROR)
			snprintf(why, sizeof(why),
				 "judge error: the checker exited %d (42 accepts, 43 rejects)",
				 res.exit_code);
		else
			snprintf(why, sizeof(why),
				 "judge error: the checker's run ended with %s%s%s",
				 sbx_status_name(res.status), res.signal ? " " : "",
				 res.signal ? sbx_signal_name(res.signal) : "");
		json_object_object_add(c, "error", json_object_new_string(why));
	}
	sbx_result_free(&res);
out:
	close(fd);
	/* A case's directory goes as soon as it is judged: 100 copies of a large compiled checker
	 * (and what each run wrote) must not pile up until the request ends. */
	snprintf(why, sizeof(why), "c%zu", i);
	fs_rm_tree(j->dirfd, why);
	return rc;
}

/* A sandbox failure of a checker run as the request's answer. */
static void fail_resp(struct api_resp *resp, int err, const char *msg, uint32_t wait_ms)
{
	if (err == -EAGAIN)
		h_fail(resp, EAGAIN, H_WHY_SLOTS, wait_ms, NULL);
	else
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, msg);
}

int judge_case(struct judge *j, const struct eval_req *r, size_t i, const char *out, size_t out_len,
	       struct json_object *c, struct api_resp *resp)
{
	char msg[256] = "";
	int err = 0, rc;

	/* judge_case() is called from one thread, case after case: one check host for them. */
	if (!j->seq && (j->seq = calloc(1, sizeof(*j->seq))))
		host_init(j->seq);
	rc = judge_one(j, j->seq, r, i, out, out_len, c, &err, msg, sizeof(msg));

	run_count++;
	if (rc < 0)
		fail_resp(resp, err, msg, j->cfg->queue_wait_ms);
	return rc;
}

struct batch {
	struct judge *j;
	const struct eval_req *r;
	struct judge_job *jobs;
	size_t n, next, finished;
	int (*on_done)(void *arg, const struct judge_job *job);
	void *arg;
	bool stop; /* the client went: start no more */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* finished grew */
};

static void *batch_worker(void *arg)
{
	struct batch *b = arg;
	struct host h;

	host_init(&h);
	for (;;) {
		struct judge_job *job;

		pthread_mutex_lock(&b->lock);
		job = b->next < b->n && !b->stop ? &b->jobs[b->next++] : NULL;
		pthread_mutex_unlock(&b->lock);
		if (!job) {
			if (h.tried)
				host_stop(&h, false);
			return NULL;
		}
		job->rc = judge_one(b->j, &h, b->r, job->i, job->out, job->out_len, job->c,
				    &job->err, job->msg, sizeof(job->msg));
		pthread_mutex_lock(&b->lock);
		if (b->on_done && b->on_done(b->arg, job) != 0)
			b->stop = true;
		b->finished++;
		pthread_cond_signal(&b->cond);
		pthread_mutex_unlock(&b->lock);
	}
}

int judge_cases(struct judge *j, const struct eval_req *r, struct judge_job *jobs, size_t n,
		int parallel, int (*on_done)(void *arg, const struct judge_job *job),
		int (*on_tick)(void *arg), void *arg, struct api_resp *resp)
{
	struct batch b = {.j = j, .r = r, .jobs = jobs, .n = n, .on_done = on_done, .arg = arg};
	pthread_t th[EVAL_MAX_PARALLEL];
	int started = 0, rc = 0, want = parallel;

	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	/* With on_tick this thread keeps the stream alive instead of judging. */
	if (!on_tick)
		want--;
	for (; started < want && (size_t)started < n; started++)
		if (pthread_create(&th[started], NULL, batch_worker, &b) != 0)
			break;
	if (!on_tick || started == 0) {
		batch_worker(&b); /* this thread works too: with no thread made, it does them all */
	} else {
		pthread_mutex_lock(&b.lock);
		while (b.finished < b.n && !(b.stop && b.finished == b.next)) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			if (pthread_cond_timedwait(&b.cond, &b.lock, &until) != 0) {
				pthread_mutex_unlock(&b.lock);
				if (on_tick(arg) != 0) {
					pthread_mutex_lock(&b.lock);
					b.stop = true;
					continue;
				}
				pthread_mutex_lock(&b.lock);
			}
		}
		pthread_mutex_unlock(&b.lock);
	}
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	for (size_t k = b.next; k < n; k++) {
		jobs[k].rc = -1;
		jobs[k].err = -ECANCELED;
		snprintf(jobs[k].msg, sizeof(jobs[k].msg), "the client went away");
	}
	pthread_cond_destroy(&b.cond);
	pthread_mutex_destroy(&b.lock);
	run_count += (unsigned)b.next;
	for (size_t k = 0; k < n; k++) {
		if (jobs[k].rc < 0) {
			fail_resp(resp, jobs[k].err, jobs[k].msg, j->cfg->queue_wait_ms);
			rc = -1;
			break;
		}
	}
	return rc;
}

struct json_object *judge_compile_json(const struct judge *j)
{
	return j ? j->compile : NULL;
}

void judge_free(struct judge *j)
{
	if (!j)
		return;
	if (j->seq && j->seq->tried)
		host_stop(j->seq, false);
	free(j->seq);
	if (j->dirfd >= 0)
		scratch_destroy(h_store(j->cfg), j->dirfd, j->path);
	json_object_put(j->compile);
	free(j->prog);
	free(j);
}
