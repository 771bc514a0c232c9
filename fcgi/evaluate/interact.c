/* interact.c: evaluate with an interactor (Kattis's interactive problems).
 *
 * Theory of operation. The solution and the interactor are each prepared once (judge_open:
 * compiled once when their language needs it). Each case then is TWO sandbox runs at once, in
 * two slots (so two uids, two cgroups), started from two threads of this worker:
 *   s<i>/  the solution's /work: its program and two FIFOs, sol.in and sol.out
 *   i<i>/  the interactor's /work: its program, input, answer, feedback/, and hard links to the
 *          same two FIFOs
 * both under one fresh scratch directory of the request (hard links need one filesystem). The
 * solution runs as `sh -c 'exec "$@" <sol.in >sol.out'`; the interactor under a small Python
 * wrapper (INTERACT_WRAPPER) that opens sol.in for writing then sol.out for reading, the order
 * the solution's shell opens them in, so neither open waits for the other forever (a run that
 * never opens is ended by its wall limit). The solution sees neither the input nor the answer;
 * the broker captures only the stderr of each (stdout went to the FIFOs).
 *
 * Who ended first: when the interactor has exited, the wrapper reads a descriptor of its own on
 * sol.out without blocking. End of file means the solution had already closed its output (it
 * ended first, and the interactor's verdict may be its reaction to that); "no data yet" means
 * the solution was still there. The wrapper keeps its own end of sol.in open until it has
 * looked: the interactor's exit alone gives the solution no end of file, so a solution that
 * dies of that end of file (input() raising EOFError) cannot be taken for one that ended first,
 * however late the wrapper runs on a loaded machine. It writes "S" or "I" to /work/.first, in the
 * interactor's directory, which the solution cannot reach.
 *
 * Verdict (Kattis: judge the solution's own failure first, unless the interactor ended first):
 * the solution ended first and failed on its own (non-zero exit, signal, limit): its RTE, TLE,
 * MLE or OLE. Otherwise the interactor's exit: 42 AC (or the solution's own failure, if it then
 * failed anyway), 43 WA, anything else (a crash, a limit) JE.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "judge.h"

#define INTERACT_MAX_ARGV 128

/* The interactor's wrapper (see the top of the file), run as python3 -S -c WRAPPER argv... */
static const char INTERACT_WRAPPER[] =
    "import os, signal, subprocess, sys\n"
    "w = os.open('/work/sol.in', os.O_WRONLY)\n"
    "r = os.open('/work/sol.out', os.O_RDONLY)\n"
    "seen = os.open('/work/sol.out', os.O_RDONLY | os.O_NONBLOCK)\n"
    "p = subprocess.Popen(sys.argv[1:], stdin=r, stdout=w, close_fds=True)\n"
    "os.close(r)\n"
    "rc = p.wait()\n"
    "first = 'I'\n"
    "try:\n"
    "    for _ in range(256):\n"
    "        if not os.read(seen, 65536):\n"
    "            first = 'S'\n"
    "            break\n"
    "except BlockingIOError:\n"
    "    pass\n"
    "os.close(seen)\n"
    "os.close(w)\n"
    "with open('/work/.first', 'w') as f:\n"
    "    f.write(first)\n"
    "if rc < 0:\n"
    "    signal.signal(-rc, signal.SIG_DFL)\n"
    "    os.kill(os.getpid(), -rc)\n"
    "sys.exit(rc)\n";

struct side {
	const struct config *cfg;
	const char *argv[INTERACT_MAX_ARGV];
	int dirfd;
	struct sbx_limits limits;
	struct sbx_result res;
	int rc;
	int cancel_fd;		/* streamed: the client's connection (its EOF ends the run) */
	struct eval_stream *es; /* streamed, the side run from the request's thread: keepalives */
};

/* sbx_output_fn of a streamed side: its ticks keep the answer alive (stdout went to a FIFO). */
static int side_tick(void *arg, int stream, const char *data, size_t len)
{
	(void)data;
	(void)len;
	return stream == 0 ? eval_stream_tick(arg) : 0;
}

/* Run one side through the broker, waiting for a slot up to the server's queue wait. */
static void *side_run(void *arg)
{
	struct side *s = arg;
	struct sbx_request req;
	struct timespec t0, now;

	memset(&req, 0, sizeof(req));
	req.argv = s->argv;
	req.workdir_fd = s->dirfd;
	req.stdin_fd = -1;
	req.cancel_fd = s->cancel_fd;
	req.limits = s->limits;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (s->es)
			s->rc = sbx_client_run_stream(s->cfg->broker_socket, &req, NULL, side_tick,
						      s->es, &s->res);
		else
			s->rc = sbx_client_run(s->cfg->broker_socket, &req, &s->res);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (s->rc != -EAGAIN ||
		    (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
			(long)s->cfg->queue_wait_ms)
			break;
		sbx_result_free(&s->res);
		nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
	}
	return NULL;
}

/* "<interp> -c <script> <arg0> <run argv of j with args>" into argv. */
static void wrap_argv(const char **argv, const char *interp, const char *script, const char *arg0,
		      const struct judge *j, const char *const *args, size_t nargs)
{
	size_t n = 0;

	argv[n++] = interp;
	if (strcmp(interp, EVAL_PYTHON) == 0)
		argv[n++] = "-S";
	argv[n++] = "-c";
	argv[n++] = script;
	if (arg0)
		argv[n++] = arg0;
	judge_argv(j, args, nargs, argv + n, INTERACT_MAX_ARGV - n);
}

/* A fresh directory name in parent; its fd or -errno. */
static int new_dir(int parent, const char *name)
{
	int fd;

	if (mkdirat(parent, name, 0755) < 0)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Lay out case i's two directories under arena (see the top of the file). 0 or -errno; the two
 * fds in sfd, ifd (caller closes). */
static int case_dirs(int arena, size_t i, const struct judge *sol, const struct judge *itr,
		     struct json_object *src, int *sfd, int *ifd)
{
	static const char *const fifos[] = {"sol.in", "sol.out"};
	char sname[32], iname[32], from[64], to[64];
	int rc;

	snprintf(sname, sizeof(sname), "s%zu", i);
	snprintf(iname, sizeof(iname), "i%zu", i);
	if ((*sfd = new_dir(arena, sname)) < 0)
		return *sfd;
	if ((*ifd = new_dir(arena, iname)) < 0)
		return *ifd;
	for (size_t k = 0; k < 2; k++) {
		snprintf(from, sizeof(from), "%s/%s", sname, fifos[k]);
		snprintf(to, sizeof(to), "%s/%s", iname, fifos[k]);
		if (mkfifoat(*sfd, fifos[k], 0600) < 0 || linkat(arena, from, arena, to, 0) < 0)
			return -errno;
	}
	if ((rc = judge_put(sol, *sfd)) < 0 || (rc = judge_put(itr, *ifd)) < 0 ||
	    (rc = judge_case_files(*ifd, src)) < 0)
		return rc;
	return 0;
}

/* Remove case i's two directories (what both runs wrote goes with them). */
static void drop_case(int arena, size_t i)
{
	char name[32];

	snprintf(name, sizeof(name), "s%zu", i);
	fs_rm_tree(arena, name);
	snprintf(name, sizeof(name), "i%zu", i);
	fs_rm_tree(arena, name);
}

/* The solution's own verdict for a run that did not end well, else NULL. */
static const char *own_failure(const struct sbx_result *r)
{
	switch (r->status) {
	case SBX_OK:
		return NULL;
	case SBX_TIMEOUT:
		return "TLE";
	case SBX_MEMORY_LIMIT:
		return "MLE";
	case SBX_OUTPUT_LIMIT:
		return "OLE";
	default:
		return "RTE";
	}
}

/* The case object from both runs (see the verdict rule at the top). Caller owns it. */
static struct json_object *case_json(size_t i, const struct side *s, const struct side *it, int ifd)
{
	struct json_object *c = json_object_new_object();
	const struct sbx_result *sr = &s->res, *ir = &it->res;
	bool it_exited = ir->status == SBX_OK || ir->status == SBX_ERROR;
	int code = it_exited ? ir->exit_code : -1;
	const char *own = own_failure(sr), *verdict;
	char why[256] = "", *first = NULL;
	size_t first_len = 0;
	bool sol_first;

	/* No answer from the wrapper (the interactor's run was killed): the interactor's fault. */
	judge_read_file(ifd, ".first", 8, true, &first, &first_len);
	sol_first = first && first[0] == 'S';
	free(first);

	if (own && sol_first)
		verdict = own;
	else if (code == JUDGE_EXIT_AC)
		verdict = own ? own : "AC";
	else
		verdict = code == JUDGE_EXIT_WA ? "WA" : "JE";
	if (strcmp(verdict, "JE") == 0) {
		if (it_exited)
			snprintf(why, sizeof(why),
				 "judge error: the interactor exited %d (42 accepts, 43 rejects)",
				 code);
		else
			snprintf(why, sizeof(why),
				 "judge error: the interactor's run ended with %s%s%s",
				 sbx_status_name(ir->status), ir->signal ? " " : "",
				 ir->signal ? sbx_signal_name(ir->signal) : "");
	} else if (strcmp(verdict, "AC") != 0 && strcmp(verdict, "WA") != 0) {
		snprintf(why, sizeof(why), "the solution's run ended with %s%s%s%s",
			 sbx_status_name(sr->status), sr->signal ? " " : "",
			 sr->signal ? sbx_signal_name(sr->signal) : "",
			 sr->status == SBX_TIMEOUT && sbx_limit_name(sr->limit) ? " (limit)" : "");
	}
	json_object_object_add(c, "index", json_object_new_uint64(i));
	json_object_object_add(c, "passed", json_object_new_boolean(strcmp(verdict, "AC") == 0));
	json_object_object_add(c, "status", json_object_new_string(sbx_status_name(sr->status)));
	json_object_object_add(c, "verdict", json_object_new_string(verdict));
	json_object_object_add(c, "got", NULL);
	json_object_object_add(c, "expected", NULL);
	json_object_object_add(c, "error", why[0] ? json_object_new_string(why) : NULL);
	/* The interactor's stdout went to the solution: its feedback is stderr + judgemessage. */
	json_object_object_add(c, "feedback", judge_feedback(ifd, "", 0, ir->err, ir->err_len));
	json_object_object_add(c, "stdout", json_object_new_string(""));
	json_object_object_add(c, "stderr", api_utf8_string(sr->err, sr->err_len));
	json_object_object_add(c, "stdout_truncated", json_object_new_boolean(false));
	json_object_object_add(c, "stderr_truncated", json_object_new_boolean(sr->err_truncated));
	json_object_object_add(c, "exit_code",
			       sr->status == SBX_OK || sr->status == SBX_ERROR
				   ? json_object_new_int(sr->exit_code)
				   : NULL);
	if (sr->signal && sbx_signal_name(sr->signal))
		json_object_object_add(c, "signal",
				       json_object_new_string(sbx_signal_name(sr->signal)));
	if (sr->status == SBX_TIMEOUT && sbx_limit_name(sr->limit))
		json_object_object_add(c, "limit",
				       json_object_new_string(sbx_limit_name(sr->limit)));
	json_object_object_add(c, "wall_ms", json_object_new_uint64(sr->wall_ms));
	json_object_object_add(c, "cpu_ms", json_object_new_uint64(sr->cpu_ms));
	json_object_object_add(c, "memory_kb", json_object_new_uint64(sr->memory_kb));
	return c;
}

/* A case that did not run (the solution did not compile, the interactor did not, or an earlier
 * case failed with stop_on_first_failure). Caller owns it. */
static struct json_object *unrun_case(size_t i, const char *verdict, const char *status,
				      const char *why)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "index", json_object_new_uint64(i));
	json_object_object_add(c, "passed", json_object_new_boolean(false));
	json_object_object_add(c, "status", json_object_new_string(status));
	json_object_object_add(c, "verdict", verdict ? json_object_new_string(verdict) : NULL);
	json_object_object_add(c, "got", NULL);
	json_object_object_add(c, "expected", NULL);
	json_object_object_add(c, "error", json_object_new_string(why));
	json_object_object_add(c, "feedback", NULL);
	json_object_object_add(c, "wall_ms", json_object_new_uint64(0));
	json_object_object_add(c, "cpu_ms", json_object_new_uint64(0));
	json_object_object_add(c, "memory_kb", json_object_new_uint64(0));
	return c;
}

/* Streamed: case c (borrowed) as an event. -1 once the client is gone. */
static int send_case(struct eval_stream *es, struct json_object *c)
{
	return es && eval_stream_event(es, "case", c) < 0 ? -1 : 0;
}

struct json_object *interact_run(const struct api_req *req, const struct eval_req *r,
				 struct eval_stream *es, struct api_resp *resp)
{
	static const char *const sol_script = "exec \"$@\" <sol.in >sol.out";
	struct eval_prog sp = {r->lang, r->code, r->limits};
	struct judge *sol = NULL, *itr = NULL;
	struct json_object *out = NULL, *cases = NULL;
	struct store_err e = {0};
	const char *sol_why = NULL, *itr_why = NULL;
	bool sol_ce, itr_bad, failed = false;
	size_t passed = 0;
	char path[4096];
	int arena = -1;
	struct timespec t0, now;
	uint64_t spent;

	clock_gettime(CLOCK_MONOTONIC, &t0);

	if (!(sol = judge_open(req, &sp, resp)) || !(itr = judge_open(req, &r->interactor, resp)))
		goto out;
	arena = scratch_create(h_store(req->cfg), path, sizeof(path), &e);
	if (arena < 0) {
		h_store_error(resp, &e, NULL);
		goto out;
	}
	sol_ce = judge_broken(sol, &sol_why);
	itr_bad = judge_broken(itr, &itr_why);
	cases = json_object_new_array();
	for (size_t i = 0; i < r->ncases; i++) {
		struct json_object *src = json_object_array_get_idx(r->cases, i), *c, *v, *args;
		const char *cargs[64];
		size_t nargs = 0;
		struct side s = {0}, it = {0};
		pthread_t th;
		int sfd = -1, ifd = -1, rc;

		if (es && es->rs.resp->gone) {
			api_error(resp, 500, "internal_error", NULL, "The client went away.");
			goto case_fail;
		}
		if (failed && r->stop_on_failure) {
			json_object_array_add(
			    cases, unrun_case(i, NULL, "skipped",
					      "skipped: stop_on_first_failure and an earlier "
					      "case failed"));
			send_case(es, json_object_array_get_idx(cases, i));
			continue;
		}
		/* The whole request stays within the server's evaluate budget, like the runner's.
		 */
		clock_gettime(CLOCK_MONOTONIC, &now);
		spent = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000 +
			(uint64_t)((now.tv_nsec - t0.tv_nsec) / 1000000);
		if (spent + 100 >= req->cfg->evaluate_wall_ms) {
			json_object_array_add(
			    cases, unrun_case(i, NULL, "skipped",
					      "skipped: the request ran out of the server's "
					      "evaluate wall_ms"));
			send_case(es, json_object_array_get_idx(cases, i));
			failed = true;
			continue;
		}
		if (sol_ce || itr_bad) {
			json_object_array_add(cases, unrun_case(i, sol_ce ? "CE" : "JE",
								sol_ce ? "error" : "ok",
								sol_ce ? sol_why : itr_why));
			send_case(es, json_object_array_get_idx(cases, i));
			failed = true;
			continue;
		}
		args = NULL;
		if (json_object_object_get_ex(src, "args", &args))
			for (size_t k = 0; k < json_object_array_length(args) && k < 64; k++)
				cargs[nargs++] =
				    json_object_get_string(json_object_array_get_idx(args, k));
		rc = case_dirs(arena, i, sol, itr, src, &sfd, &ifd);
		if (rc < 0) {
			api_error(resp, 500, "internal_error", NULL,
				  "The interactive case %zu could not be laid out: %s.", i,
				  strerror(-rc));
			goto case_fail;
		}
		s.cfg = it.cfg = req->cfg;
		s.dirfd = sfd;
		it.dirfd = ifd;
		s.limits = r->limits;
		it.limits = r->interactor.limits;
		s.cancel_fd = it.cancel_fd = -1;
		if (es && req->conn_watch)
			s.cancel_fd = it.cancel_fd = req->conn_fd;
		it.es = es;
		if (s.limits.wall_ms > req->cfg->evaluate_wall_ms - spent)
			s.limits.wall_ms = req->cfg->evaluate_wall_ms - spent;
		if (it.limits.wall_ms > req->cfg->evaluate_wall_ms - spent)
			it.limits.wall_ms = req->cfg->evaluate_wall_ms - spent;
		wrap_argv(s.argv, "/bin/sh", sol_script, "sh", sol, cargs, nargs);
		wrap_argv(it.argv, EVAL_PYTHON, INTERACT_WRAPPER, NULL, itr, judge_kattis_args, 3);
		if (pthread_create(&th, NULL, side_run, &s) != 0) {
			api_error(resp, 500, "internal_error", NULL, "No thread for the solution.");
			goto case_fail;
		}
		side_run(&it);
		pthread_join(th, NULL);
		run_count += 2;
		if (s.rc < 0 || it.rc < 0 || s.res.status == SBX_INTERNAL_ERROR ||
		    it.res.status == SBX_INTERNAL_ERROR) {
			const struct side *bad =
			    s.rc < 0 || s.res.status == SBX_INTERNAL_ERROR ? &s : &it;

			h_fail(resp, bad->rc == -EAGAIN ? EAGAIN : EIO,
			       bad->rc == -EAGAIN ? H_WHY_SLOTS : H_WHY_SANDBOX,
			       req->cfg->queue_wait_ms,
			       bad->res.message[0] ? bad->res.message : "no detail");
			sbx_result_free(&s.res);
			sbx_result_free(&it.res);
			goto case_fail;
		}
		c = case_json(i, &s, &it, ifd);
		sbx_result_free(&s.res);
		sbx_result_free(&it.res);
		close(sfd);
		close(ifd);
		drop_case(arena, i);
		if (json_object_object_get_ex(c, "passed", &v) && json_object_get_boolean(v))
			passed++;
		else
			failed = true;
		json_object_array_add(cases, c);
		send_case(es, c);
		continue;
	case_fail:
		if (sfd >= 0)
			close(sfd);
		if (ifd >= 0)
			close(ifd);
		json_object_put(cases);
		cases = NULL;
		goto out;
	}
	out = json_object_new_object();
	json_object_object_add(out, "passed", json_object_new_boolean(passed == r->ncases));
	json_object_object_add(out, "passed_count", json_object_new_uint64(passed));
	json_object_object_add(out, "total", json_object_new_uint64(r->ncases));
	json_object_object_add(out, "cases", cases);
	json_object_object_add(out, "compile", json_object_get(judge_compile_json(sol)));
	json_object_object_add(out, "interactor_compile", json_object_get(judge_compile_json(itr)));
	json_object_object_add(out, "load", NULL);
	json_object_object_add(out, "error", NULL);
out:
	if (arena >= 0)
		scratch_destroy(h_store(req->cfg), arena, path);
	judge_free(sol);
	judge_free(itr);
	return out;
}
