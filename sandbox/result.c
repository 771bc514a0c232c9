/* result.c: naming what a run produced, freeing results, and the host probe. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

const char *sbx_status_name(enum sbx_status s)
{
	static const char *const names[] = {
	    "ok", "error", "signal", "timeout", "memory_limit", "output_limit", "internal_error"};

	return (unsigned)s < sizeof names / sizeof *names ? names[s] : "internal_error";
}

const char *sbx_limit_name(enum sbx_limit_kind k)
{
	return k == SBX_LIMIT_WALL ? "wall" : k == SBX_LIMIT_CPU ? "cpu" : NULL;
}

const char *sbx_signal_name(int sig)
{
	static const char *const names[] = {
	    [SIGHUP] = "SIGHUP",       [SIGINT] = "SIGINT",	  [SIGQUIT] = "SIGQUIT",
	    [SIGILL] = "SIGILL",       [SIGTRAP] = "SIGTRAP",	  [SIGABRT] = "SIGABRT",
	    [SIGBUS] = "SIGBUS",       [SIGFPE] = "SIGFPE",	  [SIGKILL] = "SIGKILL",
	    [SIGUSR1] = "SIGUSR1",     [SIGSEGV] = "SIGSEGV",	  [SIGUSR2] = "SIGUSR2",
	    [SIGPIPE] = "SIGPIPE",     [SIGALRM] = "SIGALRM",	  [SIGTERM] = "SIGTERM",
	    [SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD",	  [SIGCONT] = "SIGCONT",
	    [SIGSTOP] = "SIGSTOP",     [SIGTSTP] = "SIGTSTP",	  [SIGTTIN] = "SIGTTIN",
	    [SIGTTOU] = "SIGTTOU",     [SIGURG] = "SIGURG",	  [SIGXCPU] = "SIGXCPU",
	    [SIGXFSZ] = "SIGXFSZ",     [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
	    [SIGWINCH] = "SIGWINCH",   [SIGIO] = "SIGIO",	  [SIGPWR] = "SIGPWR",
	    [SIGSYS] = "SIGSYS",
	};

	if (sig <= 0 || (unsigned)sig >= sizeof names / sizeof *names)
		return NULL;
	return names[sig];
}

void sbx_result_free(struct sbx_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	memset(res, 0, sizeof *res);
}

int sbx_probe(struct sbx_probe *out)
{
	char cg[256];
	long ns = 0;

	memset(out, 0, sizeof *out);
	out->cgroup_version = sbx_cg_probe(cg, sizeof cg);
	/* The kernel features every run needs; a missing one fails closed here rather than mid-run.
	 */
	if (syscall(SYS_mount_setattr, -1, "", 0, NULL, 0) < 0 && errno == ENOSYS)
		ns = -1;
	if (syscall(SYS_open_tree, -1, "", 0) < 0 && errno == ENOSYS)
		ns = -1;
	if (syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS)
		ns = -1;
	out->usable = out->cgroup_version > 0 && ns == 0;
	snprintf(out->detail, sizeof out->detail, "%s; %s", cg,
		 ns == 0 ? "clone3, open_tree and mount_setattr available"
			 : "kernel lacks clone3, open_tree or mount_setattr");
	return out->usable ? 0 : -1;
}
