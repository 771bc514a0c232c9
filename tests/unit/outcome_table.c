/* outcome_table.c: unit tests of sandbox/outcome.c, the pure decision of what a run's outcome
 * was. No root, no sandbox: each row gives the facts run.c would have gathered (why the
 * supervisor killed the init, the program's wait status, the cgroup's OOM counter, the init's
 * error report) and checks status, limit, exit code, signal and message. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "../../sandbox/outcome.h"
#include "../lib/tap.h"

/* wait statuses as waitpid() builds them */
#define EXITED(c) (((c)&0xff) << 8)
#define SIGNALED(s) ((s)&0x7f)
#define STOPPED(s) ((((s)&0xff) << 8) | 0x7f)

static struct sbx_result res;

static struct sbx_run_facts exited(int code)
{
	struct sbx_run_facts f;

	memset(&f, 0, sizeof f);
	f.have_status = true;
	f.wstatus = EXITED(code);
	return f;
}

static struct sbx_run_facts signaled(int sig)
{
	struct sbx_run_facts f = exited(0);

	f.wstatus = SIGNALED(sig);
	return f;
}

/* Decide into a result that already holds a message, as a failing step would have left it. */
static const struct sbx_result *decide(struct sbx_run_facts f)
{
	memset(&res, 0, sizeof res);
	snprintf(res.message, sizeof res.message, "earlier step");
	sbx_outcome(&f, &res);
	return &res;
}

static bool is(const struct sbx_result *r, enum sbx_status st, enum sbx_limit_kind lim, int code,
	       int sig)
{
	return r->status == st && r->limit == lim && r->exit_code == code && r->signal == sig;
}

/* A run the wall timer stopped while it pressed on its memory limit was stopped by its memory. */
static void test_crawl_at_memory_limit(void)
{
	struct sbx_run_facts f = exited(0);

	f.killed = SBX_KILL_WALL;
	f.memory_limit = 128u << 20;
	f.anon_at_kill = 126u << 20;
	TAP_OK(is(decide(f), SBX_MEMORY_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "wall kill with anonymous memory at the limit: memory_limit");
	f.anon_at_kill = 64u << 20;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_WALL, 0, SIGKILL),
	       "wall kill with memory to spare: timeout, limit wall");
	f.anon_at_kill = 126u << 20;
	f.memory_limit = 0;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_WALL, 0, SIGKILL),
	       "wall kill, memory not read: timeout, limit wall");
	f.memory_limit = 128u << 20;
	f.killed = SBX_KILL_CPU;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_CPU, 0, SIGKILL),
	       "a CPU kill stays a CPU timeout whatever the memory");
}

static void test_program_outcomes(void)
{
	struct sbx_run_facts f;

	TAP_OK(is(decide(exited(0)), SBX_OK, SBX_LIMIT_NONE, 0, 0), "exit 0: ok");
	TAP_OK(is(decide(exited(1)), SBX_ERROR, SBX_LIMIT_NONE, 1, 0),
	       "exit 1: error, exit_code 1");
	TAP_OK(is(decide(exited(255)), SBX_ERROR, SBX_LIMIT_NONE, 255, 0), "exit 255: error");
	TAP_OK(is(decide(signaled(SIGSEGV)), SBX_SIGNAL, SBX_LIMIT_NONE, 0, SIGSEGV),
	       "SIGSEGV: signal");
	TAP_OK(is(decide(signaled(SIGABRT)), SBX_SIGNAL, SBX_LIMIT_NONE, 0, SIGABRT),
	       "SIGABRT: signal");
	TAP_OK(is(decide(signaled(SIGKILL)), SBX_SIGNAL, SBX_LIMIT_NONE, 0, SIGKILL),
	       "the program's own kill -9 (no supervisor kill, no OOM): signal SIGKILL");
	TAP_OK(is(decide(signaled(SIGXCPU)), SBX_TIMEOUT, SBX_LIMIT_CPU, 0, SIGXCPU),
	       "SIGXCPU (the RLIMIT_CPU backstop): timeout, limit cpu");
	TAP_OK(is(decide(signaled(SIGXFSZ)), SBX_SIGNAL, SBX_LIMIT_NONE, 0, SIGXFSZ),
	       "SIGXFSZ (file size limit): signal");
	TAP_OK(!strcmp(decide(exited(0))->message, "earlier step"),
	       "a program outcome leaves the message alone");
	f = exited(0);
	f.have_status = false;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR &&
		   strstr(res.message, "without reporting the program's status"),
	       "no wait status from the init: internal_error (%s)", res.message);
	f = exited(0);
	f.wstatus = STOPPED(SIGSTOP);
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR &&
		   strstr(res.message, "unknown wait status"),
	       "a wait status neither exited nor signaled: internal_error, never ok");
}

static void test_kills(void)
{
	struct sbx_run_facts f;

	f = exited(0), f.have_status = false, f.killed = SBX_KILL_WALL;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_WALL, 0, SIGKILL), "wall kill: timeout wall");
	f = signaled(SIGKILL), f.killed = SBX_KILL_WALL;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_WALL, 0, SIGKILL),
	       "wall kill with the program's status showing our SIGKILL: timeout wall");
	f = signaled(SIGKILL), f.killed = SBX_KILL_CPU;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_CPU, 0, SIGKILL), "cpu kill: timeout cpu");
	f = exited(0), f.killed = SBX_KILL_CPU;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_CPU, 0, SIGKILL),
	       "cpu limit reached while the program was exiting 0: still timeout cpu");
	f = exited(3), f.killed = SBX_KILL_CPU;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_CPU, 0, SIGKILL),
	       "cpu kill racing an exit 3: timeout cpu, the exit code is not reported");
	TAP_OK(is(decide(exited(0)), SBX_OK, SBX_LIMIT_NONE, 0, 0),
	       "the CPU timer firing after the init died kills nothing: the exit stands");
	f = exited(0), f.killed = SBX_KILL_OUTPUT;
	TAP_OK(is(decide(f), SBX_OUTPUT_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "output cap hit, program exited 0 meanwhile: output_limit");
	f = signaled(SIGKILL), f.killed = SBX_KILL_OUTPUT;
	TAP_OK(is(decide(f), SBX_OUTPUT_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "output cap hit: output_limit, signal SIGKILL");
}

static void test_memory(void)
{
	struct sbx_run_facts f;

	f = signaled(SIGKILL), f.oom_kills = 1;
	TAP_OK(is(decide(f), SBX_MEMORY_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "SIGKILL with an OOM kill counted: memory_limit");
	f = exited(1), f.oom_kills = 2;
	TAP_OK(is(decide(f), SBX_MEMORY_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "a parent exiting 1 after a child was OOM-killed: memory_limit");
	f = exited(0), f.oom_kills = 1;
	TAP_OK(is(decide(f), SBX_MEMORY_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "exit 0 after an OOM kill in the tree: memory_limit");
	f = exited(0), f.have_status = false, f.oom_kills = 1;
	TAP_OK(is(decide(f), SBX_MEMORY_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "the OOM killer took the init too (no status): memory_limit");
	f = signaled(SIGKILL), f.oom_kills = 1, f.killed = SBX_KILL_WALL;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_WALL, 0, SIGKILL),
	       "SIGKILL, OOM counted and a wall kill: the supervisor's reason wins (timeout wall)");
	f = signaled(SIGKILL), f.oom_kills = 1, f.killed = SBX_KILL_CPU;
	TAP_OK(is(decide(f), SBX_TIMEOUT, SBX_LIMIT_CPU, 0, SIGKILL),
	       "OOM counted and a cpu kill: timeout cpu");
	f = signaled(SIGKILL), f.oom_kills = 1, f.killed = SBX_KILL_OUTPUT;
	TAP_OK(is(decide(f), SBX_OUTPUT_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "OOM counted and an output kill: output_limit");
	f = signaled(SIGXCPU), f.oom_kills = 1;
	TAP_OK(is(decide(f), SBX_MEMORY_LIMIT, SBX_LIMIT_NONE, 0, SIGKILL),
	       "OOM counted and SIGXCPU: memory_limit (the counter is the kernel's word)");
}

static void test_internal(void)
{
	struct sbx_run_facts f;

	f = exited(0), f.killed = SBX_KILL_SETUP;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && !strcmp(res.message, "earlier step"),
	       "setup kill: internal_error, the failing step's message stands");
	f = exited(0), f.killed = SBX_KILL_CANCEL;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && strstr(res.message, "cancelled"),
	       "cancelled: internal_error (%s)", res.message);
	f = signaled(SIGKILL), f.killed = SBX_KILL_CANCEL, f.oom_kills = 1;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR, "cancelled wins over an OOM kill");
	f = exited(0), f.child_failed = true, f.child_errno = EPERM, f.child_step = "mount /usr";
	TAP_OK(
	    decide(f)->status == SBX_INTERNAL_ERROR &&
		!strcmp(res.message, "sandbox setup failed: mount /usr: Operation not permitted"),
	    "the init's error report: internal_error naming the step (%s)", res.message);
	f.killed = SBX_KILL_WALL, f.oom_kills = 1;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && strstr(res.message, "mount /usr"),
	       "an error report wins over a wall kill and an OOM kill");
	f.killed = SBX_KILL_SETUP;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && strstr(res.message, "mount /usr"),
	       "an error report names the step even after a setup kill");
	f = exited(0), f.cgroup_failed = true;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && !strcmp(res.message, "earlier step"),
	       "the cgroup could not be read: internal_error, its message stands");
	f.killed = SBX_KILL_WALL;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR, "... even after a wall kill");
	f = exited(0), f.cgroup_failed = true, f.child_failed = true, f.child_errno = EIO,
	f.child_step = "x";
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && !strcmp(res.message, "earlier step"),
	       "a cgroup failure is reported before an error report");
	f.killed = SBX_KILL_SETUP;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && strstr(res.message, "setup failed: x"),
	       "after a setup kill a cgroup failure is not reported: the error report is");
	f = exited(0), f.cgroup_failed = true, f.killed = SBX_KILL_SETUP;
	TAP_OK(decide(f)->status == SBX_INTERNAL_ERROR && !strcmp(res.message, "earlier step"),
	       "setup kill and cgroup failure: the setup step's message");
}

static void test_cpu_recheck(void)
{
	TAP_OK(sbx_cpu_recheck_ms(1000, 0, 1) == 1000, "cpu: nothing used, 1 CPU: look in 1 s");
	TAP_OK(sbx_cpu_recheck_ms(1000, 0, 4) == 250, "cpu: nothing used, 4 CPUs: in 250 ms");
	TAP_OK(sbx_cpu_recheck_ms(1000, 600000000ull, 2) == 200, "cpu: 600 of 1000 ms, 2 CPUs");
	TAP_OK(sbx_cpu_recheck_ms(1000, 999000000ull, 1) == 2, "cpu: 1 ms left: at least 2 ms");
	TAP_OK(sbx_cpu_recheck_ms(1000, 999999999ull, 8) == 2, "cpu: under 1 ms left: 2 ms");
	TAP_OK(sbx_cpu_recheck_ms(1000, 1000000000ull, 1) == 0, "cpu: budget exactly spent: kill");
	TAP_OK(sbx_cpu_recheck_ms(1000, 5000000000ull, 1) == 0, "cpu: past the budget: kill");
	TAP_OK(sbx_cpu_recheck_ms(1000, 0, 0) == 1000, "cpu: a CPU count of 0 counts as 1");
}

int main(void)
{
	test_program_outcomes();
	test_crawl_at_memory_limit();
	test_kills();
	test_memory();
	test_internal();
	test_cpu_recheck();
	return tap_done();
}
