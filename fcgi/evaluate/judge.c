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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "judge.h"

const char *const judge_kattis_args[3] = {SBX_WORK_DIR "/input", SBX_WORK_DIR "/answer",
					  SBX_WORK_DIR "/feedback/"};

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

int judge_read_file(int dirfd, const char *name, size_t max, bool trunc, char **out, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t n = 0, want;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > max && !trunc) {
		rc = -EFBIG;
		goto out;
	}
	want = (uint64_t)st.st_size > max ? max : (size_t)st.st_size;
	*out = malloc(want + 1);
	if (!*out) {
		rc = -ENOMEM;
		goto out;
	}
	while (n < want) {
		ssize_t k = read(fd, *out + n, want - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	(*out)[n] = '\0';
	*len = n;
out:
	close(fd);
	return rc;
}

void judge_argv(const struct judge *j, const char *const *args, size_t nargs, const char **argv,
		size_t max)
{
	size_t n = 0;

	for (char *const *t = j->lang->run; t && *t && n + nargs + 1 < max; t++) {
		if (strcmp(*t, "{args}") == 0) {
			for (size_t i = 0; i < nargs; i++)
				argv[n++] = args[i];
		} else if (strcmp(*t, "{file}") == 0) {
			argv[n++] = j->prog_name;
		} else {
			argv[n++] = *t;
		}
	}
	argv[n] = NULL;
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

int judge_put(const struct judge *j, int dirfd)
{
	return eval_put_file(dirfd, j->prog_name, j->prog, j->prog_len, 0755);
}

bool judge_broken(const struct judge *j, const char **why)
{
	*why = j->broken_why;
	return j->broken;
}

int judge_case_files(int dirfd, struct json_object *src)
{
	struct json_object *v;
	const char *in = "", *ans = "";
	size_t in_len = 0, ans_len = 0;
	int rc;

	if (json_object_object_get_ex(src, "stdin", &v) && json_object_is_type(v, json_type_string))
		in = json_object_get_string(v), in_len = (size_t)json_object_get_string_len(v);
	if (json_object_object_get_ex(src, "expected_stdout", &v) &&
	    json_object_is_type(v, json_type_string))
		ans = json_object_get_string(v), ans_len = (size_t)json_object_get_string_len(v);
	if ((rc = eval_put_file(dirfd, "input", in, in_len, 0644)) < 0 ||
	    (rc = eval_put_file(dirfd, "answer", ans, ans_len, 0644)) < 0)
		return rc;
	return mkdirat(dirfd, "feedback", 0755) < 0 ? -errno : 0;
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

struct json_object *judge_feedback(int casefd, const char *o, size_t o_len, const char *e,
				   size_t e_len)
{
	char *buf, *msg = NULL;
	size_t out = o_len > JUDGE_FEEDBACK_BYTES ? JUDGE_FEEDBACK_BYTES : o_len;
	size_t err = e_len > JUDGE_FEEDBACK_BYTES ? JUDGE_FEEDBACK_BYTES : e_len;
	size_t msg_len = 0, n = 0;
	struct json_object *s;
	int fb = openat(casefd, "feedback", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fb >= 0) {
		judge_read_file(fb, "judgemessage.txt", JUDGE_FEEDBACK_BYTES, true, &msg, &msg_len);
		close(fb);
	}
	buf = malloc(out + err + msg_len + 1);
	if (!buf) {
		free(msg);
		return json_object_new_string("");
	}
	memcpy(buf, o, out);
	n += out;
	memcpy(buf + n, e, err);
	n += err;
	if (msg_len)
		memcpy(buf + n, msg, msg_len);
	n += msg_len;
	s = api_utf8_string(buf, n);
	free(buf);
	free(msg);
	return s;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Mark c as judged: verdict (AC/WA/JE), passed, feedback (taken). */
static int set_verdict(struct json_object *c, int exit_ok, struct json_object *feedback)
{
	static const char *const words[] = {"JE", "AC", "WA"};

	json_object_object_add(c, "passed", json_object_new_boolean(exit_ok == 1));
	json_object_object_add(c, "verdict", json_object_new_string(words[exit_ok]));
	json_object_object_add(c, "feedback", feedback);
	return exit_ok == 1;
}

/* One run through the broker for a thread of this worker (run_sandboxed() keeps per-request
 * counters and fills a response: not for threads). Waits for a slot up to the server's queue
 * wait. 0 with res filled, or -errno (-EAGAIN: no slot) with res freed and msg set. */
static int broker_run(const struct config *cfg, int dirfd, const char *const *argv, const char *in,
		      size_t in_len, const struct sbx_limits *lim, struct sbx_result *res,
		      char *msg, size_t msglen)
{
	struct sbx_request req;
	uint64_t t0 = now_ms();
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
		if (rc != -EAGAIN || now_ms() - t0 > cfg->queue_wait_ms)
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

/* ---- the check host: a lane's checks in one sandbox run (runner/check.py, "host mode") ----
 *
 * A sandbox start per check costs more than most checks do. A lane of judge_cases() (a thread)
 * therefore starts ONE checker run, `check.py --host`, and hands it its cases one at a time;
 * the per-check run (judge_one's own path) stays for what the host cannot do and after a host
 * failed. What each check sees is what a run of its own shows it: /work holds only its case's
 * input, answer, feedback/ and the program (this side empties /work and writes them before each
 * check), the same argv, cwd and Kattis arguments, the checker's own limits (CPU and file size
 * as rlimits of its process, wall time by the host, memory by the run's cgroup), its own /tmp
 * and System V IPC (emptied by the host), and no process of an earlier check (the host, a
 * non-dumpable subreaper, kills and reaps every process but itself and init before it answers).
 * The channel is two FIFOs made here in /work before the run; the host opens them before any
 * check exists, and this side unlinks them once the host said "ready", so no check can reach
 * them by name, and the host's descriptors are out of reach (not dumpable; closed in a check).
 * A check that kills or stops the host ends the channel: end of file, or no answer within the
 * check's wall limit plus HOST_MARGIN_MS, after which the run is cancelled. That case is JE
 * (never AC: only the host's own answer line gives a verdict), the lane's later cases fall back
 * to a run each. */
#define HOST_MARGIN_MS 5000	/* the host's own work around a check (kill, reap, wipe) */
#define HOST_START_MS 15000	/* from the run's start (a slot, the interpreter) to "ready" */
#define HOST_MEMORY (32u << 20) /* the host interpreter beside the checks, in the run's cgroup */

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

static int host_tick(void *arg, int stream, const char *data, size_t len)
{
	(void)arg;
	(void)stream;
	(void)data;
	(void)len;
	return 0;
}

static void *host_run(void *arg)
{
	struct host *h = arg;
	uint64_t t0 = now_ms();

	for (;;) {
		h->rc = sbx_client_run_stream(h->j->cfg->broker_socket, &h->req, NULL, host_tick, h,
					      &h->res);
		if (h->rc != -EAGAIN || now_ms() - t0 > h->j->cfg->queue_wait_ms)
			break;
		sbx_result_free(&h->res);
		nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
	}
	__atomic_store_n(&h->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Remove everything in the host's /work (only the host runs now, waiting for a command). */
static int host_empty(struct host *h)
{
	int fd = openat(h->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((rc = fs_rm_tree(h->dirfd, e->d_name)) < 0)
			break;
	}
	closedir(d);
	return rc;
}

/* Read the host's next line within ms. 1 with it in h->line (NUL-terminated, no newline), 0 at
 * end of file (the host is gone), -ETIMEDOUT, or another -errno. */
static int host_line(struct host *h, uint64_t ms)
{
	uint64_t until = now_ms() + ms;

	for (;;) {
		char *nl = memchr(h->line, '\n', h->have);
		struct pollfd p = {.fd = h->res_fd, .events = POLLIN};
		uint64_t now = now_ms();
		ssize_t k;

		if (nl) {
			size_t used = (size_t)(nl - h->line) + 1;

			*nl = '\0';
			/* keep what follows for the next call (the host writes one line a check) */
			if (used < h->have) {
				return -EPROTO;
			}
			h->have = 0;
			return 1;
		}
		if (h->have >= sizeof(h->line) - 1)
			return -EPROTO;
		if (now >= until)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(until - now)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!p.revents)
			continue;
		k = read(h->res_fd, h->line + h->have, sizeof(h->line) - 1 - h->have);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		h->have += (size_t)k;
	}
}

/* End the host's run (at once when kill, else after it saw end of file) and free what it held. */
static void host_stop(struct host *h, bool kill)
{
	if (h->cmd_fd >= 0)
		close(h->cmd_fd);
	h->cmd_fd = -1;
	if (!kill && h->th_started && h->res_fd >= 0) {
		/* the host exits at end of file on its commands: wait for its end of the channel */
		char buf[64];
		uint64_t until = now_ms() + 2000;

		for (;;) {
			struct pollfd p = {.fd = h->res_fd, .events = POLLIN};
			uint64_t now = now_ms();

			if (now >= until || poll(&p, 1, (int)(until - now)) <= 0 ||
			    read(h->res_fd, buf, sizeof(buf)) <= 0)
				break;
		}
	}
	/* A run that ended by itself is left to report how (its stderr says why the host went). */
	for (uint64_t until = now_ms() + (kill ? 0 : 2000);
	     h->th_started && !__atomic_load_n(&h->done, __ATOMIC_ACQUIRE) && now_ms() < until;)
		nanosleep(&(struct timespec){0, 5 * 1000000L}, NULL);
	if (h->cancel_w >= 0)
		close(h->cancel_w); /* the run is killed if it is still there */
	h->cancel_w = -1;
	if (h->th_started) {
		pthread_join(h->th, NULL);
		snprintf(h->why, sizeof(h->why), "%s %.60s%s%.*s", sbx_status_name(h->res.status),
			 h->res.message, h->res.err_len ? ": " : "",
			 (int)(h->res.err_len > 100 ? 100 : h->res.err_len),
			 h->res.err ? h->res.err : "");
	}
	h->th_started = false;
	if (h->req.cancel_fd >= 0)
		close(h->req.cancel_fd);
	h->req.cancel_fd = -1;
	if (h->res_fd >= 0)
		close(h->res_fd);
	h->res_fd = -1;
	sbx_result_free(&h->res);
	if (h->dirfd >= 0) {
		close(h->dirfd);
		fs_rm_tree(h->j->dirfd, h->name);
	}
	h->dirfd = -1;
	h->alive = false;
}

/* Start h's run (once per lane). false: no host (the per-check runs judge). */
static bool host_start(struct host *h, struct judge *j, const struct eval_req *r)
{
	bool python = eval_is_python(j->lang);
	struct sbx_limits lim = r->checker.limits;
	uint64_t left;
	int pfd[2] = {-1, -1}, rc;

	h->tried = true;
	h->j = j;
	h->dirfd = h->cmd_fd = h->res_fd = h->cancel_w = -1;
	h->req.cancel_fd = -1;
	pthread_mutex_lock(&j->lock);
	left = j->cfg->evaluate_wall_ms > j->spent_ms ? j->cfg->evaluate_wall_ms - j->spent_ms : 0;
	snprintf(h->name, sizeof(h->name), "h%u", j->hosts++);
	pthread_mutex_unlock(&j->lock);
	if (left < 1000 || mkdirat(j->dirfd, h->name, 0755) < 0)
		return false;
	h->dirfd = openat(j->dirfd, h->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (h->dirfd < 0)
		goto fail;
	if (python && judge_put(j, h->dirfd) < 0)
		goto fail;
	if (mkfifoat(h->dirfd, ".sbx_cmd", 0600) < 0 || mkfifoat(h->dirfd, ".sbx_res", 0600) < 0)
		goto fail;
	/* Ours before the run starts: the read end never blocks, the command end is read-write
	 * (a write never fails for want of a reader; the host's end of file is on .sbx_res). */
	h->res_fd = openat(h->dirfd, ".sbx_res", O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	h->cmd_fd = openat(h->dirfd, ".sbx_cmd", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (h->res_fd < 0 || h->cmd_fd < 0 || pipe2(pfd, O_CLOEXEC) < 0)
		goto fail;
	h->req.cancel_fd = pfd[0];
	h->cancel_w = pfd[1];
	h->argv[0] = EVAL_PYTHON;
	h->argv[1] = "-S";
	h->argv[2] = "-B";
	h->argv[3] = EVAL_CHECK_WRAPPER;
	h->argv[4] = "--host";
	h->argv[5] = python ? j->prog_name : "-";
	h->argv[6] = NULL;
	/* The run lasts the lane: the request's checker budget; each check has its own limits. */
	lim.wall_ms = left;
	lim.cpu_ms = left;
	lim.memory_bytes += HOST_MEMORY;
	lim.processes += 2;
	h->req.argv = h->argv;
	h->req.workdir_fd = h->dirfd;
	h->req.stdin_fd = -1;
	h->req.limits = lim;
	if (pthread_create(&h->th, NULL, host_run, h) != 0)
		goto fail;
	h->th_started = true;
	rc = host_line(h, HOST_START_MS + j->cfg->queue_wait_ms);
	if (rc != 1 || strcmp(h->line, "ready") != 0)
		goto fail;
	/* No check may find the channel by name. */
	if (unlinkat(h->dirfd, ".sbx_cmd", 0) < 0 || unlinkat(h->dirfd, ".sbx_res", 0) < 0)
		goto fail;
	h->alive = true;
	return true;
fail:
	host_stop(h, true);
	return false;
}

/* Case i through the host: as judge_one() (1, 0, or -1 with *err and msg), or -2 when the host
 * could not take the case (nothing of it ran: judge it with a run of its own). */
static int host_check(struct host *h, const struct eval_req *r, size_t i, const char *out,
		      size_t out_len, struct json_object *c, int *err, char *msg, size_t msglen)
{
	struct judge *j = h->j;
	struct sbx_limits lim = r->checker.limits;
	struct json_object *job, *args, *argv_j;
	const char *argv[64], *s;
	char *o = NULL, *e = NULL, why[512], kind[16] = "";
	size_t o_len = 0, e_len = 0;
	uint64_t left, t0, fsize;
	long long seq = -1, val = 0, wall = 0, cpu = 0;
	int rc, verdict = 0;

	pthread_mutex_lock(&j->lock);
	left = j->cfg->evaluate_wall_ms > j->spent_ms ? j->cfg->evaluate_wall_ms - j->spent_ms : 0;
	pthread_mutex_unlock(&j->lock);
	if (left < 100)
		return -2; /* judge_one says why */
	if (lim.wall_ms > left)
		lim.wall_ms = left;
	if ((rc = host_empty(h)) < 0 ||
	    (rc = judge_case_files(h->dirfd, json_object_array_get_idx(r->cases, i))) < 0 ||
	    (rc = judge_put(j, h->dirfd)) < 0 ||
	    (rc = eval_put_file(h->dirfd, ".sbx_team", out, out_len, 0644)) < 0) {
		*err = rc;
		snprintf(msg, msglen, "the checker's files for case %zu: %s", i, strerror(-rc));
		return -1;
	}
	fsize = lim.file_size_bytes;
	if (lim.output_hard_bytes && lim.output_hard_bytes < fsize)
		fsize = lim.output_hard_bytes;
	job = json_object_new_object();
	args = json_object_new_array();
	argv_j = json_object_new_array();
	for (size_t k = 0; k < 3; k++)
		json_object_array_add(args, json_object_new_string(judge_kattis_args[k]));
	judge_argv(j, judge_kattis_args, 3, argv, sizeof(argv) / sizeof(argv[0]));
	for (size_t k = 0; argv[k]; k++)
		json_object_array_add(argv_j, json_object_new_string(argv[k]));
	json_object_object_add(job, "seq", json_object_new_int64(++h->seq));
	json_object_object_add(job, "cpu_ms", json_object_new_int64((int64_t)lim.cpu_ms));
	json_object_object_add(job, "wall_ms", json_object_new_int64((int64_t)lim.wall_ms));
	json_object_object_add(job, "fsize", json_object_new_int64((int64_t)fsize));
	json_object_object_add(job, "args", args);
	json_object_object_add(job, "argv", argv_j);
	s = json_object_to_json_string_ext(job, JSON_C_TO_STRING_PLAIN);
	t0 = now_ms();
	rc = eval_write_all(h->cmd_fd, s, strlen(s));
	if (rc == 0)
		rc = eval_write_all(h->cmd_fd, "\n", 1);
	json_object_put(job);
	if (rc < 0) {
		host_stop(h, true);
		return -2;
	}
	rc = host_line(h, lim.wall_ms + HOST_MARGIN_MS);
	pthread_mutex_lock(&j->lock);
	j->spent_ms += now_ms() - t0;
	pthread_mutex_unlock(&j->lock);
	if (rc == 1 &&
	    (sscanf(h->line, "%lld %15s %lld %lld %lld", &seq, kind, &val, &wall, &cpu) != 5 ||
	     seq != (long long)h->seq))
		rc = -EPROTO;
	if (rc != 1) {
		/* The host died or stopped during this check (a check can kill or stop it): this
		 * case is a judge error, the lane's later cases get runs of their own. */
		host_stop(h, rc != 0);
		snprintf(why, sizeof(why),
			 "judge error: the checker's sandbox ended during the check (%s; %s)",
			 rc == 0 ? "it ended" : strerror(-rc), h->why);
		set_verdict(c, 0, json_object_new_string(""));
		json_object_object_add(c, "error", json_object_new_string(why));
		return 0;
	}
	if (strcmp(kind, "exit") == 0 && val == JUDGE_EXIT_AC)
		verdict = 1;
	else if (strcmp(kind, "exit") == 0 && val == JUDGE_EXIT_WA)
		verdict = 2;
	judge_read_file(h->dirfd, ".sbx_out", JUDGE_FEEDBACK_BYTES, true, &o, &o_len);
	judge_read_file(h->dirfd, ".sbx_err", JUDGE_FEEDBACK_BYTES, true, &e, &e_len);
	rc =
	    set_verdict(c, verdict, judge_feedback(h->dirfd, o ? o : "", o_len, e ? e : "", e_len));
	free(o);
	free(e);
	if (verdict == 0) {
		if (strcmp(kind, "exit") == 0)
			snprintf(why, sizeof(why),
				 "judge error: the checker exited %lld (42 accepts, 43 rejects)",
				 val);
		else if (strcmp(kind, "signal") == 0)
			snprintf(why, sizeof(why),
				 "judge error: the checker's run ended with signal %s",
				 sbx_signal_name((int)val) ? sbx_signal_name((int)val) : "?");
		else
			snprintf(why, sizeof(why), "judge error: the checker's run ended with %s",
				 strcmp(kind, "output") == 0 ? "output_limit" : "timeout");
		json_object_object_add(c, "error", json_object_new_string(why));
	}
	return rc;
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
		return set_verdict(c, 0, json_object_new_string(j->broken_why));
	if (h && !h->tried)
		host_start(h, j, r);
	if (h && h->alive) {
		rc = host_check(h, r, i, out, out_len, c, err, msg, msglen);
		if (rc != -2)
			return rc;
		rc = -1;
	}
	/* All checker runs of a request together stay within the server's evaluate budget. */
	pthread_mutex_lock(&j->lock);
	left = j->cfg->evaluate_wall_ms > j->spent_ms ? j->cfg->evaluate_wall_ms - j->spent_ms : 0;
	pthread_mutex_unlock(&j->lock);
	if (left < 100)
		return set_verdict(c, 0,
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
	t0 = now_ms();
	*err = broker_run(j->cfg, fd, argv, out, out_len, &lim, &res, msg, msglen);
	if (*err < 0)
		goto out;
	pthread_mutex_lock(&j->lock);
	j->spent_ms += now_ms() - t0;
	pthread_mutex_unlock(&j->lock);
	if (res.status == SBX_OK || res.status == SBX_ERROR) {
		if (res.exit_code == JUDGE_EXIT_AC)
			verdict = 1;
		else if (res.exit_code == JUDGE_EXIT_WA)
			verdict = 2;
	}
	rc =
	    set_verdict(c, verdict, judge_feedback(fd, res.out, res.out_len, res.err, res.err_len));
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
		*j->seq = (struct host){.dirfd = -1, .cmd_fd = -1, .res_fd = -1, .cancel_w = -1};
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
	struct host h = {.dirfd = -1, .cmd_fd = -1, .res_fd = -1, .cancel_w = -1};

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
