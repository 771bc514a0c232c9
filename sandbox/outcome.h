/* outcome.h: the decisions of a run that need no system call (outcome.c), kept apart from the
 * supervision (run.c) so that every row of the outcome table is unit-tested without root. */
#ifndef SBX_OUTCOME_H
#define SBX_OUTCOME_H

#include <stdbool.h>
#include <stdint.h>

#include "sandbox.h"

/* Why the supervisor killed the run's init. Only the first reason counts: a later one (the wall
 * timer firing while an output kill is under way) changes nothing. */
enum sbx_kill_reason {
	SBX_KILL_NONE = 0,
	SBX_KILL_WALL,	 /* wall timer fired while the init was alive */
	SBX_KILL_CPU,	 /* the cgroup's CPU counter passed the budget while the init was alive */
	SBX_KILL_OUTPUT, /* a stream passed output_hard_bytes */
	SBX_KILL_SETUP,	 /* the sandbox failed: a supervisor step, or the init's error report */
	SBX_KILL_CANCEL, /* the caller went away */
};

/* Everything the outcome depends on, gathered once every process of the run is dead. */
struct sbx_run_facts {
	enum sbx_kill_reason killed;
	bool cgroup_failed;	/* reading the cgroup's counters failed (its message is in res) */
	bool child_failed;	/* the init's error report arrived in full: */
	int child_errno;	/*   the errno of the failed step, */
	const char *child_step; /*   and its name (NUL-terminated) */
	bool have_status;	/* the init reported the program's wait status: */
	int wstatus;		/*   as waitpid() gave it */
	uint64_t oom_kills;	/* the cgroup's OOM kill counter for this run */
	uint64_t
	    anon_at_kill; /* anonymous memory of the run when the wall timer killed it, bytes */
	uint64_t memory_limit; /* the run's memory limit, bytes (0: unknown) */
};

/* Decide the run's status, limit, exit code and signal from its facts, in this order:
 *   1. the cgroup could not be read (unless the sandbox had already failed) -> internal_error
 *   2. the init reported a failed setup step                         -> internal_error
 *   3. killed for SETUP (the failing step's message stands)          -> internal_error
 *   4. killed for CANCEL                                             -> internal_error
 *   5. killed for WALL while its anonymous memory held at least 90% of the memory limit
 *                                               -> memory_limit, signal SIGKILL (see below)
 *      killed for WALL or CPU                   -> timeout, limit wall|cpu, signal SIGKILL
 *   6. killed for OUTPUT                        -> output_limit, signal SIGKILL
 *   7. the cgroup counted an OOM kill           -> memory_limit, signal SIGKILL
 *   8. no wait status from the init                                  -> internal_error
 *   9. the program exited                       -> ok (0) or error, exit_code
 *  10. the program was killed by SIGXCPU (the RLIMIT_CPU backstop) -> timeout, limit cpu
 *  11. the program was killed by another signal -> signal
 * A kill by the supervisor wins over what the program's status says (the SIGKILL it shows is
 * ours); an OOM kill wins over the status for the same reason (the kernel's SIGKILL, or a parent
 * that exited after losing a child to it). A program pressing on its memory limit without swap
 * may not be OOM-killed for a long time: the kernel reclaims and refaults its own code pages
 * instead (cgroup v1 especially), so it crawls until the wall timer; such a run was stopped by
 * its memory, and says so. res->message is set for internal_error, except in 1
 * and 3 where the failing step already wrote it; other fields of res are left alone. */
void sbx_outcome(const struct sbx_run_facts *f, struct sbx_result *res);

/* The CPU budget, from the cgroup's counter: 0 when limit_ms is spent, else how long (ms, at
 * least 2) before it could be spent with all ncpu CPUs busy, i.e. when to look again. */
uint64_t sbx_cpu_recheck_ms(uint64_t limit_ms, uint64_t used_ns, long ncpu);

#endif
