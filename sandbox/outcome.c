/* outcome.c: what a run's outcome was, from the facts run.c gathered (outcome.h). Pure: no
 * system call, no global state; tests/unit/outcome_table.c covers every row. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "outcome.h"

static void internal(struct sbx_result *res, const char *message)
{
	res->status = SBX_INTERNAL_ERROR;
	res->limit = SBX_LIMIT_NONE;
	if (message)
		snprintf(res->message, sizeof res->message, "%s", message);
}

static void killed(struct sbx_result *res, enum sbx_status status, enum sbx_limit_kind limit)
{
	res->status = status;
	res->limit = limit;
	res->signal = SIGKILL;
}

void sbx_outcome(const struct sbx_run_facts *f, struct sbx_result *res)
{
	if (f->cgroup_failed && f->killed != SBX_KILL_SETUP) {
		internal(res, NULL);
	} else if (f->child_failed) {
		internal(res, NULL);
		snprintf(res->message, sizeof res->message, "sandbox setup failed: %s: %s",
			 f->child_step ? f->child_step : "?", strerror(f->child_errno));
	} else if (f->killed == SBX_KILL_SETUP) {
		internal(res, NULL);
	} else if (f->killed == SBX_KILL_CANCEL) {
		internal(res, "the run was cancelled: its caller went away");
	} else if (f->killed == SBX_KILL_WALL && f->memory_limit &&
		   f->anon_at_kill >= f->memory_limit / 10 * 9) {
		killed(res, SBX_MEMORY_LIMIT, SBX_LIMIT_NONE);
	} else if (f->killed == SBX_KILL_WALL) {
		killed(res, SBX_TIMEOUT, SBX_LIMIT_WALL);
	} else if (f->killed == SBX_KILL_CPU) {
		killed(res, SBX_TIMEOUT, SBX_LIMIT_CPU);
	} else if (f->killed == SBX_KILL_OUTPUT) {
		killed(res, SBX_OUTPUT_LIMIT, SBX_LIMIT_NONE);
	} else if (f->oom_kills > 0) {
		killed(res, SBX_MEMORY_LIMIT, SBX_LIMIT_NONE);
	} else if (!f->have_status) {
		internal(res, "the sandbox's init exited without reporting the program's status");
	} else if (WIFEXITED(f->wstatus)) {
		res->exit_code = WEXITSTATUS(f->wstatus);
		res->status = res->exit_code == 0 ? SBX_OK : SBX_ERROR;
	} else if (WIFSIGNALED(f->wstatus)) {
		res->signal = WTERMSIG(f->wstatus);
		res->status = res->signal == SIGXCPU ? SBX_TIMEOUT : SBX_SIGNAL;
		res->limit = res->signal == SIGXCPU ? SBX_LIMIT_CPU : SBX_LIMIT_NONE;
	} else {
		/* waitpid without WUNTRACED reports nothing else: a status we cannot explain */
		internal(res, "the sandbox's init reported an unknown wait status");
	}
}

uint64_t sbx_cpu_recheck_ms(uint64_t limit_ms, uint64_t used_ns, long ncpu)
{
	uint64_t limit_ns = limit_ms * 1000000ull, left_ms;

	if (used_ns >= limit_ns)
		return 0;
	left_ms = (limit_ns - used_ns) / 1000000ull / (uint64_t)(ncpu > 0 ? ncpu : 1);
	return left_ms < 2 ? 2 : left_ms;
}
