/* runs_drive.c: a test client of the runs API (sandbox.h, section "runs") for
 * tests/sandbox/runs*.t.
 *
 *   runs_drive SOCK stream DIR [-i ID] [-o OWNER] [-I] [-w WALL_MS] [-c OUT_CAP] [-s SLOW_MS] --
 * ARGV... streams a run: a line per event on stdout ("chunk MS STREAM LEN", "tick MS", "end MS
 * rc=.. status=.. out_len=.. err_len=.. out_truncated=.. exit=.. signal=.."); what was delivered
 * goes to DIR/out.live and DIR/err.live, the result to DIR/out.final and DIR/err.final. -s sleeps
 * that long in each callback (a slow reader). runs_drive SOCK plain DIR -- ARGV...          the
 * same run through sbx_client_run runs_drive SOCK stdin ID OWNER DATA [eof]     prints the return
 * value runs_drive SOCK signal ID OWNER SIGNUM        prints the return value runs_drive SOCK bench
 * N                        N short runs each way: median wall, µs */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../sandbox/sandbox.h"

static uint64_t t0;
static FILE *live[2];
static unsigned slow_ms;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int on_out(void *arg, int stream, const char *data, size_t len)
{
	(void)arg;
	if (stream == 0) {
		printf("tick %llu\n", (unsigned long long)((now_us() - t0) / 1000));
	} else {
		printf("chunk %llu %d %zu\n", (unsigned long long)((now_us() - t0) / 1000), stream,
		       len);
		fwrite(data, 1, len, live[stream - 1]);
		fflush(live[stream - 1]);
	}
	fflush(stdout);
	if (slow_ms)
		usleep(slow_ms * 1000);
	return 0;
}

static int on_nothing(void *arg, int stream, const char *data, size_t len)
{
	(void)arg, (void)stream, (void)data, (void)len;
	return 0;
}

static void save(const char *dir, const char *name, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *sock;

	if (argc < 3)
		return 64;
	sock = argv[1];
	if (strcmp(argv[2], "stdin") == 0 && argc >= 6) {
		printf("%d\n",
		       sbx_client_run_stdin(sock, argv[3], argv[4], argv[5], strlen(argv[5]),
					    argc > 6 && strcmp(argv[6], "eof") == 0));
		return 0;
	}
	if (strcmp(argv[2], "signal") == 0 && argc >= 6) {
		printf("%d\n", sbx_client_run_signal(sock, argv[3], argv[4], atoi(argv[5])));
		return 0;
	}
	if (strcmp(argv[2], "start") == 0 && argc >= 10) {
		struct sbx_run_spec spec;
		struct sbx_request req;
		char err[256] = "";
		int rc;

		memset(&spec, 0, sizeof spec);
		memset(&req, 0, sizeof req);
		snprintf(spec.id, sizeof spec.id, "%s", argv[3]);
		snprintf(spec.owner, sizeof spec.owner, "%s", argv[4]);
		snprintf(spec.session, sizeof spec.session, "%s", argv[5]);
		spec.max_per_owner = (uint32_t)atoi(argv[6]);
		spec.keep_s = (uint32_t)atoi(argv[7]);
		req.workdir_fd = req.stdin_fd = req.cancel_fd = -1;
		req.limits.wall_ms = 60000;
		req.argv = (const char *const *)&argv[9];
		rc = sbx_client_run_start(sock, &req, &spec, err, sizeof err);
		printf("%d %s\n", rc, err);
		return 0;
	}
	if (strcmp(argv[2], "status") == 0 && argc >= 5) {
		struct sbx_run_info info;
		struct sbx_result res;
		int rc = sbx_client_run_status(sock, argv[3], argv[4], &info, &res);

		printf("%d %s %s %llu\n", rc, info.state == SBX_RUN_ENDED ? "ended" : "running",
		       info.state == SBX_RUN_ENDED ? sbx_status_name(info.status) : "-",
		       (unsigned long long)info.out_len);
		if (rc == 0 && info.state == SBX_RUN_ENDED) {
			fwrite(res.out, 1, res.out_len, stdout);
			sbx_result_free(&res);
		}
		return 0;
	}
	if (strcmp(argv[2], "output") == 0 && argc >= 8) {
		struct sbx_run_chunk c;
		int rc =
		    sbx_client_run_output(sock, argv[3], argv[4], atoi(argv[5]),
					  strtoull(argv[6], NULL, 10), (uint32_t)atoi(argv[7]), &c);

		printf("%d %llu %d %d\n", rc, (unsigned long long)c.next, c.ended, c.truncated);
		if (rc == 0)
			fwrite(c.data, 1, c.len, stdout);
		free(c.data);
		return 0;
	}
	if (strcmp(argv[2], "list") == 0 && argc >= 4) {
		struct sbx_run_info *v;
		size_t n, k;
		int rc = sbx_client_run_list(sock, argv[3], argc > 4 ? argv[4] : NULL, &v, &n);

		printf("%d %zu\n", rc, n);
		for (k = 0; k < n; k++)
			printf("%s %s\n", v[k].id,
			       v[k].state == SBX_RUN_ENDED ? "ended" : "running");
		free(v);
		return 0;
	}
	if (strcmp(argv[2], "kill") == 0 && argc >= 5) {
		printf("%d\n", sbx_client_run_kill(sock, argv[3], argv[4]));
		return 0;
	}
	if (strcmp(argv[2], "bench") == 0 && argc >= 4) {
		int n = atoi(argv[3]), k;
		uint64_t *a = calloc((size_t)n, 8), *b = calloc((size_t)n, 8);
		const char *args[] = {"/bin/echo", "hi", NULL};
		struct sbx_request req;
		struct sbx_result res;

		memset(&req, 0, sizeof req);
		req.argv = args;
		req.workdir_fd = req.stdin_fd = req.cancel_fd = -1;
		for (k = 0; k < n; k++) {
			uint64_t s = now_us();

			sbx_client_run(sock, &req, &res);
			a[k] = now_us() - s;
			sbx_result_free(&res);
			s = now_us();
			sbx_client_run_stream(sock, &req, NULL, on_nothing, NULL, &res);
			b[k] = now_us() - s;
			sbx_result_free(&res);
		}
		qsort(a, (size_t)n, 8, cmp_u64);
		qsort(b, (size_t)n, 8, cmp_u64);
		printf("bench plain_us=%llu stream_us=%llu\n", (unsigned long long)a[n / 2],
		       (unsigned long long)b[n / 2]);
		free(a);
		free(b);
		return 0;
	}
	if ((strcmp(argv[2], "stream") == 0 || strcmp(argv[2], "plain") == 0) && argc >= 5) {
		const char *dir = argv[3];
		struct sbx_run_spec spec;
		struct sbx_request req;
		struct sbx_result res;
		char path[512];
		int i = 4, rc;

		memset(&spec, 0, sizeof spec);
		memset(&req, 0, sizeof req);
		req.workdir_fd = req.stdin_fd = req.cancel_fd = -1;
		for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
			if (!strcmp(argv[i], "-i") && i + 1 < argc)
				snprintf(spec.id, sizeof spec.id, "%s", argv[++i]);
			else if (!strcmp(argv[i], "-o") && i + 1 < argc)
				snprintf(spec.owner, sizeof spec.owner, "%s", argv[++i]);
			else if (!strcmp(argv[i], "-I"))
				spec.interactive = true;
			else if (!strcmp(argv[i], "-w") && i + 1 < argc)
				req.limits.wall_ms = strtoull(argv[++i], NULL, 10);
			else if (!strcmp(argv[i], "-c") && i + 1 < argc)
				req.limits.output_bytes = strtoull(argv[++i], NULL, 10);
			else if (!strcmp(argv[i], "-s") && i + 1 < argc)
				slow_ms = (unsigned)atoi(argv[++i]);
		}
		if (i >= argc - 1)
			return 64;
		req.argv = (const char *const *)&argv[i + 1];
		snprintf(path, sizeof path, "%s/out.live", dir);
		live[0] = fopen(path, "w");
		snprintf(path, sizeof path, "%s/err.live", dir);
		live[1] = fopen(path, "w");
		t0 = now_us();
		if (strcmp(argv[2], "plain") == 0)
			rc = sbx_client_run(sock, &req, &res);
		else
			rc = sbx_client_run_stream(sock, &req, &spec, on_out, NULL, &res);
		printf("end %llu rc=%d status=%s out_len=%zu err_len=%zu out_truncated=%d exit=%d "
		       "signal=%d wall_ms=%llu message=%s\n",
		       (unsigned long long)((now_us() - t0) / 1000), rc,
		       sbx_status_name(res.status), res.out_len, res.err_len, res.out_truncated,
		       res.exit_code, res.signal, (unsigned long long)res.wall_ms, res.message);
		save(dir, "out.final", res.out, res.out_len);
		save(dir, "err.final", res.err, res.err_len);
		sbx_result_free(&res);
		return 0;
	}
	return 64;
}
