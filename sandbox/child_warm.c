/* child_warm.c: the run's init and its pre-started program (warm.c's design, in the child).
 *
 * While the slot is idle, the init (child.c) forks the program's process ahead of the job through
 * every step a program gets (sbx_child_exec), as an interpreter that prepares itself and waits on
 * its fd 3. When the job arrives and is that interpreter's kind of run, the init hands it over
 * (its rlimits, argv, environment and stdin) and the interpreter becomes the program; otherwise it
 * is killed and the program starts cold. Same rules as child.c: only async-signal-safe calls. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* warm.c: fork the program's process ahead of the job, through every step a program gets, as
 * a Python interpreter that prepares itself and then waits on fd 3 (its end of *sock). Returns
 * its pid once it has reported ready, or -1 (no pre-started process: the job starts cold). */
pid_t sbx_child_warm_prestart(const struct sbx_child_args *a, int *sock)
{
	static const char *argv[8];
	int sv[2];
	pid_t pid;
	char c = 0;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	/* The init has closed 0-2: keep the pair off the program's stdio numbers. */
	for (int i = 0; i < 2; i++) {
		if (sv[i] <= 2) {
			int fd = fcntl(sv[i], F_DUPFD_CLOEXEC, 3);

			close(sv[i]);
			sv[i] = fd;
		}
	}
	if (sv[0] < 0 || sv[1] < 0) {
		if (sv[0] >= 0)
			close(sv[0]);
		if (sv[1] >= 0)
			close(sv[1]);
		return -1;
	}
	sbx_warm_argv(a->warm_opts, a->warm_hint, argv);
	pid = fork();
	if (pid == 0) {
		/* A failure here must not reach the slot's error pipe: the run would then fail,
		 * where a cold start serves it. The error pipe closes at the exec. */
		struct sbx_child_args pa = *a;

		pa.err_fd = -1;
		close(sv[0]);
		sbx_child_exec(&pa, NULL, -1, sv[1], (char *const *)argv,
			       (char *const *)sbx_warm_env);
	}
	close(sv[1]);
	if (pid > 0) {
		do
			n = read(sv[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1 && c == 'r') {
			*sock = sv[0];
			return pid;
		}
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR) {
		}
	}
	close(sv[0]);
	return -1;
}

/* node cannot receive a descriptor (no recvmsg) nor move one (no dup2), but it can close its fd
 * 0 and open a path, which then becomes fd 0: the job's stdin is held for it by a short-lived
 * fork of this init, which drops every capability and becomes dumpable so that the pre-started
 * node (same ids, no capabilities) may open /proc/<holder>/fd/<in>. Only our stub runs in the
 * sandbox while the holder lives: the init kills and reaps it before the stub runs the program.
 * The holder's pid once it is ready, or -1. */
static pid_t stdin_holder(int in)
{
	int p[2];
	pid_t pid;
	char c = 0;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];

		unsigned lo = (unsigned)(in < p[1] ? in : p[1]),
			 hi = (unsigned)(in < p[1] ? p[1] : in);

		/* nothing but stdin (and the pipe) is open in the holder */
		if (lo > 0)
			syscall(SYS_close_range, 0, lo - 1, 0);
		if (hi > lo + 1)
			syscall(SYS_close_range, lo + 1, hi - 1, 0);
		syscall(SYS_close_range, hi + 1, ~0U, 0);
		memset(data, 0, sizeof data);
		if (syscall(SYS_capset, &hdr, data) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 ||
		    write(p[1], "h", 1) != 1)
			_exit(127);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid > 0) {
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1 || c != 'h') {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR) {
			}
			pid = -1;
		}
	}
	close(p[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR) {
	}
}

/* A node job's stdin: the stub reopens it from the holder, says 'k' (or 'f': it could not), and
 * goes on at our 'g', sent once the holder is gone. 0, or -1 (start cold). */
static int node_stdin(int sock, pid_t holder)
{
	char c = 0;
	ssize_t n;

	do
		n = read(sock, &c, 1);
	while (n < 0 && errno == EINTR);
	reap(holder);
	if (n != 1 || c != 'k')
		return -1;
	return write(sock, "g", 1) == 1 ? 0 : -1;
}

/* Hand the job to the pre-started interpreter (Python or node, warm.c): its rlimits, then argv
 * from the script (or -c) on, the environment and stdin. 0, or -1 when it cannot take this job
 * (start cold instead). */
int sbx_child_warm_handover(const struct sbx_child_args *a, pid_t pid, int sock, int in,
			    const struct sbx_job *job, const char *strings, char *const *argv,
			    char *const *envp)
{
	static uint32_t hdr[5];
	unsigned opts;
	size_t off;
	pid_t holder = -1;
	int idx = sbx_warm_parse(argv, envp, &opts);
	bool node = opts & SBX_WARM_OPT_NODE;

	if (idx < 1 || opts != a->warm_opts ||
	    sbx_child_job_rlimits(pid, &job->limits, true) != NULL)
		return -1;
	off = (size_t)(argv[idx] - strings);
	hdr[0] = job->argc - (uint32_t)idx;
	hdr[1] = job->envc;
	hdr[2] = job->strings_len - (uint32_t)off;
	/* node's header also says where its stdin is: the holder's pid and descriptor, or 0 0 */
	hdr[3] = hdr[4] = 0;
	if (node && in >= 0) {
		holder = stdin_holder(in);
		if (holder < 0)
			return -1;
		hdr[3] = (uint32_t)holder;
		hdr[4] = (uint32_t)in;
	}
	if (sbx_send_fds(sock, hdr, node ? 5 * sizeof *hdr : 3 * sizeof *hdr, &in,
			 in >= 0 && !node ? 1 : 0) < 0 ||
	    sbx_write_all(sock, strings + off, hdr[2]) < 0) {
		if (holder > 0)
			reap(holder);
		return -1;
	}
	return holder > 0 ? node_stdin(sock, holder) : 0;
}
