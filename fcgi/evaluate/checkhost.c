/* checkhost.c: the check host, a lane's checks in one sandbox run (runner/check.py, host mode).
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkhost.h"
#include "compile.h"

#define HOST_MARGIN_MS 5000	/* the host's own work around a check (kill, reap, wipe) */
#define HOST_START_MS 15000	/* from the run's start (a slot, the interpreter) to "ready" */
#define HOST_MEMORY (32u << 20) /* the host interpreter beside the checks, in the run's cgroup */

void host_init(struct host *h)
{
	*h = (struct host){.dirfd = -1, .cmd_fd = -1, .res_fd = -1, .cancel_w = -1};
}

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
	uint64_t t0 = judge_now_ms();

	for (;;) {
		h->rc = sbx_client_run_stream(h->j->cfg->broker_socket, &h->req, NULL, host_tick, h,
					      &h->res);
		if (h->rc != -EAGAIN || judge_now_ms() - t0 > h->j->cfg->queue_wait_ms)
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
	uint64_t until = judge_now_ms() + ms;

	for (;;) {
		char *nl = memchr(h->line, '\n', h->have);
		struct pollfd p = {.fd = h->res_fd, .events = POLLIN};
		uint64_t now = judge_now_ms();
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
void host_stop(struct host *h, bool kill)
{
	if (h->cmd_fd >= 0)
		close(h->cmd_fd);
	h->cmd_fd = -1;
	if (!kill && h->th_started && h->res_fd >= 0) {
		/* the host exits at end of file on its commands: wait for its end of the channel */
		char buf[64];
		uint64_t until = judge_now_ms() + 2000;

		for (;;) {
			struct pollfd p = {.fd = h->res_fd, .events = POLLIN};
			uint64_t now = judge_now_ms();

			if (now >= until || poll(&p, 1, (int)(until - now)) <= 0 ||
			    read(h->res_fd, buf, sizeof(buf)) <= 0)
				break;
		}
	}
	/* A run that ended by itself is left to report how (its stderr says why the host went). */
	for (uint64_t until = judge_now_ms() + (kill ? 0 : 2000);
	     h->th_started && !__atomic_load_n(&h->done, __ATOMIC_ACQUIRE) &&
	     judge_now_ms() < until;)
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
bool host_start(struct host *h, struct judge *j, const struct eval_req *r)
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
int host_check(struct host *h, const struct eval_req *r, size_t i, const char *out, size_t out_len,
	       struct json_object *c, int *err, char *msg, size_t msglen)
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

	left = judge_left_ms(j);
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
	t0 = judge_now_ms();
	rc = eval_write_all(h->cmd_fd, s, strlen(s));
	if (rc == 0)
		rc = eval_write_all(h->cmd_fd, "\n", 1);
	json_object_put(job);
	if (rc < 0) {
		host_stop(h, true);
		return -2;
	}
	rc = host_line(h, lim.wall_ms + HOST_MARGIN_MS);
	judge_spend(j, judge_now_ms() - t0);
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
		judge_set_verdict(c, 0, json_object_new_string(""));
		json_object_object_add(c, "error", json_object_new_string(why));
		return 0;
	}
	if (strcmp(kind, "exit") == 0 && val == JUDGE_EXIT_AC)
		verdict = 1;
	else if (strcmp(kind, "exit") == 0 && val == JUDGE_EXIT_WA)
		verdict = 2;
	judge_read_file(h->dirfd, ".sbx_out", JUDGE_FEEDBACK_BYTES, true, &o, &o_len);
	judge_read_file(h->dirfd, ".sbx_err", JUDGE_FEEDBACK_BYTES, true, &e, &e_len);
	rc = judge_set_verdict(c, verdict,
			       judge_feedback(h->dirfd, o ? o : "", o_len, e ? e : "", e_len));
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