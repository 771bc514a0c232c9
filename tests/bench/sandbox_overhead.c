/* sandbox_overhead.c: the sandbox's cost per run, as the service pays it.
 *
 * Alternates, pair by pair, a bare run of a program (posix_spawn + wait), the same program in a
 * warm sandbox slot (sbx_run with every isolation step and limit on, the broker's hot path), and
 * the same program under util-linux `unshare -mpnfiu --mount-proc` (bare namespaces, no limits,
 * no filesystem view), and prints medians, p99 and the overhead/ratio against bare measured in
 * this same run. Usage: sandbox_overhead [pairs] (root). */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../sandbox/sandbox.h"

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double spawn_wait(char *const argv[])
{
	double t = now_ms();
	pid_t pid;
	int st;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	waitpid(pid, &st, 0);
	return now_ms() - t;
}

/* warm: the slot's next sandbox is prepared before the clock starts, as the broker does while
 * idle; cold: preparing it is timed too (a saturated broker's back-to-back case). */
static double sandboxed(struct sbx_slot *slot, const char *const argv[], int wd, int warm)
{
	struct sbx_request req;
	struct sbx_result res;
	char err[256];
	double t;

	if (warm && sbx_slot_prewarm(slot, err, sizeof err) < 0) {
		fprintf(stderr, "prewarm: %s\n", err);
		exit(1);
	}
	memset(&req, 0, sizeof req);
	req.argv = argv;
	req.workdir_fd = wd;
	req.stdin_fd = req.cancel_fd = -1;
	t = now_ms();
	if (sbx_run(slot, &req, &res) < 0 || res.status != SBX_OK) {
		fprintf(stderr, "sandboxed run failed: %s %s\n", sbx_status_name(res.status),
			res.message);
		exit(1);
	}
	t = now_ms() - t;
	sbx_result_free(&res);
	return t;
}

/* Busy CPU time of the whole machine so far, in ms (every process and kernel thread, so the
 * namespace teardown the kernel defers to its workers counts too). */
static double busy_ms(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	long hz = sysconf(_SC_CLK_TCK);

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &v[6], &v[7]) != 8) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	/* user nice system [idle iowait] irq softirq [steal: another guest's, not ours] */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) * 1e3 / (double)hz;
}

/* CPU per run, what throughput pays: n bare runs, then n sandboxed runs with the sandbox
 * prepared each time (on a saturated host preparing is not free), one after another. */
static double own_ms(void)
{
	struct rusage s, c;

	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	return (double)(s.ru_utime.tv_sec + s.ru_stime.tv_sec + c.ru_utime.tv_sec +
			c.ru_stime.tv_sec) *
		   1e3 +
	       (double)(s.ru_utime.tv_usec + s.ru_stime.tv_usec + c.ru_utime.tv_usec +
			c.ru_stime.tv_usec) /
		   1e3;
}

static void cpu_per_run(struct sbx_slot *slot, int wd, char *const bare[], int n)
{
	double t0, o0, bare_ms = 0, sbx_ms = 0, bare_own = 0, sbx_own = 0;
	int i, k;
	const int chunks = 5; /* alternated, so a change in the machine's speed hits both alike */

	for (k = 0; k < chunks; k++) {
		usleep(100000);
		t0 = busy_ms(), o0 = own_ms();
		for (i = 0; i < n / chunks; i++)
			spawn_wait(bare);
		bare_own += own_ms() - o0;
		usleep(100000);
		bare_ms += busy_ms() - t0;
		t0 = busy_ms(), o0 = own_ms();
		for (i = 0; i < n / chunks; i++)
			sandboxed(slot, (const char *const *)bare, wd, 1);
		sbx_own += own_ms() - o0;
		usleep(100000);
		sbx_ms += busy_ms() - t0;
	}
	n = n / chunks * chunks;
	bare_own /= n, sbx_own /= n, bare_ms /= n, sbx_ms /= n;
	printf("sandbox_cpu_per_run own %.2f ms vs bare %.2f ms (%+.2f); machine-wide %.2f vs %.2f "
	       "(%+.2f) (%d runs of %s each, alternated in %d chunks; no target: reference for "
	       "throughput)\n",
	       sbx_own, bare_own, sbx_own - bare_own, sbx_ms, bare_ms, sbx_ms - bare_ms, n, bare[0],
	       chunks);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[i];
}

static void bench(struct sbx_slot *slot, int wd, const char *label, char *const bare[],
		  char *const unshare_argv[], int pairs)
{
	double *b = calloc((size_t)pairs, sizeof *b), *s = calloc((size_t)pairs, sizeof *s);
	double *u = calloc((size_t)pairs, sizeof *u), *c = calloc((size_t)pairs, sizeof *c);
	double bm, bp;
	int i;

	for (i = 0; i < 3; i++) { /* warm caches */
		spawn_wait(bare);
		sandboxed(slot, (const char *const *)bare, wd, 1);
	}
	for (i = 0; i < pairs; i++) {
		b[i] = spawn_wait(bare);
		s[i] = sandboxed(slot, (const char *const *)bare, wd, 1);
		u[i] = spawn_wait(unshare_argv);
		c[i] = sandboxed(slot, (const char *const *)bare, wd, 0);
	}
	bm = pct(b, pairs, 0.5), bp = pct(b, pairs, 0.99);
	printf("%-20s %-12s median %7.2f ms  p99 %7.2f ms\n", label, "bare", bm, bp);
	{
		const char *names[] = {"sbx (warm)", "sbx (cold)", "unshare"};
		double *sets[] = {s, c, u};

		for (i = 0; i < 3; i++) {
			double m = pct(sets[i], pairs, 0.5), p = pct(sets[i], pairs, 0.99);

			printf(
			    "%-20s %-12s median %7.2f ms  p99 %7.2f ms  overhead median %+.2f ms, "
			    "p99 %+.2f ms, ratio %.3f\n",
			    label, names[i], m, p, m - bm, p - bp, m / bm);
			if (i == 0 && strcmp(label, "/bin/true") == 0)
				printf("sandbox_true_overhead median %+.2f ms, p99 %+.2f ms vs "
				       "bare %.2f ms "
				       "(target median <= +3 ms, p99 <= +10 ms)\n",
				       m - bm, p - bp, bm);
			else if (i == 0)
				printf(
				    "sandbox_python_ratio %.3f vs bare %.2f ms (target <= 1.15)\n",
				    m / bm, bm);
			else if (i == 2)
				printf("unshare_%s median %+.2f ms, p99 %+.2f ms, ratio %.3f "
				       "(reference)\n",
				       strcmp(label, "/bin/true") == 0 ? "true" : "python", m - bm,
				       p - bp, m / bm);
		}
	}
	free(b);
	free(s);
	free(u);
	free(c);
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? atoi(argv[1]) : 200, wd;
	char tmpl[] = "/tmp/sbx-bench-XXXXXX", err[256];
	struct sbx_config cfg;
	struct sbx_slot *slot;
	char *true_argv[] = {"/bin/true", NULL};
	char *py_argv[] = {"/usr/bin/python3", "-c", "print(1)", NULL};
	char *u_true[] = {"/usr/bin/unshare", "-mpnfiu", "--mount-proc", "/bin/true", NULL};
	char *u_py[] = {"/usr/bin/unshare", "-mpnfiu", "--mount-proc", "/usr/bin/python3", "-c",
			"print(1)",	    NULL};

	if (!mkdtemp(tmpl) || chown(tmpl, 65534, 65534) < 0)
		return 1;
	wd = open(tmpl, O_PATH | O_DIRECTORY);
	memset(&cfg, 0, sizeof cfg);
	cfg.uid_base = 310000;
	cfg.files_uid = cfg.files_gid = 65534;
	cfg.cgroup_name = "sbx-bench";
	slot = sbx_slot_open(&cfg, 0, err, sizeof err);
	if (!slot) {
		fprintf(stderr, "slot: %s\n", err);
		return 1;
	}
	printf(
	    "# sandbox overhead: %d alternating rounds of bare / sbx warm / unshare / sbx cold\n"
	    "# sbx = full sandbox: 7 namespaces, pivoted read-only root, seccomp, cgroup limits,\n"
	    "#       capture pipes, idmapped /work; warm = the slot's next sandbox was prepared\n"
	    "#       while idle (the broker's steady state), cold = preparation timed too\n"
	    "# unshare = util-linux unshare -mpnfiu --mount-proc (bare namespaces, no limits)\n",
	    pairs);
	bench(slot, wd, "/bin/true", true_argv, u_true, pairs);
	bench(slot, wd, "python3 -c print(1)", py_argv, u_py, pairs / 2 > 20 ? pairs / 2 : 20);
	cpu_per_run(slot, wd, py_argv, pairs / 2 > 50 ? pairs / 2 : 50);
	/* The floor of a run that is not pre-started: a slot whose last run was Python prepares
	 * its next sandbox with an interpreter that /bin/true would not use, so this one never
	 * pre-starts (SBX_WARM is read when a slot opens). */
	sbx_slot_close(slot);
	setenv("SBX_WARM", "0", 1);
	slot = sbx_slot_open(&cfg, 0, err, sizeof err);
	if (!slot) {
		fprintf(stderr, "slot: %s\n", err);
		return 1;
	}
	cpu_per_run(slot, wd, true_argv, pairs > 100 ? pairs : 100);
	sbx_slot_close(slot);
	rmdir(tmpl);
	return 0;
}
