/* child.c: what runs between clone3 and execve, inside the new namespaces.
 *
 * The slot's template (child_template.c) assembles a minimal root in a mount namespace of its
 * own. The clone3 child of each run is born in a copy of that namespace and becomes PID 1 of a
 * new pid namespace ("init"); ahead of time, while the slot is idle, it mounts its own /proc, /tmp
 * and /dev/shm (and may pre-start the program, child_warm.c); then it waits for a job on its
 * control socket: the work directory (a detached idmapped mount), stdin, argv, env and limits. It
 * attaches /work, forks the program, and then only reaps: when the program's main process exits,
 * init reports its wait status and exits, and the kernel kills everything else left in the
 * namespace. Only async-signal-safe calls here and in child_template.c, child_warm.c and
 * zygote.c's sbx_zygote_main: no malloc, no stdio; every failure is reported as a fixed struct
 * over a close-on-exec pipe (sbx_child_die), then _exit. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

void sbx_child_copy_str(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

void sbx_child_die(const struct sbx_child_args *a, const char *step, const char *detail)
{
	struct sbx_child_error e;
	size_t n;

	memset(&e, 0, sizeof e);
	e.err = errno;
	sbx_child_copy_str(e.step, sizeof e.step, step);
	if (detail) {
		n = strlen(e.step);
		sbx_child_copy_str(e.step + n, sizeof e.step - n, " ");
		sbx_child_copy_str(e.step + n + 1, sizeof e.step - n - 1, detail);
	}
	if (write(a->err_fd, &e, sizeof e) < 0) {
		/* nothing left to report to */
	}
	_exit(127);
}

/* Untrusted work runs at SBX_NICE or nicer: never less nice than the broker was started (an
 * operator who starts the service under `nice -n 15` would otherwise see every run fail: lowering
 * the nice value needs a privilege the sandbox does not have). */
void sbx_child_yield_cpu(const struct sbx_child_args *a)
{
	int cur;

	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	if (errno != 0)
		sbx_child_die(a, "getpriority", NULL);
	if (cur < SBX_NICE && setpriority(PRIO_PROCESS, 0, SBX_NICE) < 0)
		sbx_child_die(a, "setpriority", NULL);
}

static void drop_caps(const struct sbx_child_args *a)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			sbx_child_die(a, "drop bounding capability", NULL);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		sbx_child_die(a, "clear ambient capabilities", NULL);
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		sbx_child_die(a, "capset", NULL);
}

static void set_rlimit(const struct sbx_child_args *a, int res, rlim_t v, const char *name)
{
	struct rlimit rl = {v, v};

	if (setrlimit(res, &rl) < 0)
		sbx_child_die(a, "setrlimit", name);
}

/* The rlimits that depend on the job, set on process pid (0: ourselves). NULL, or the name of
 * the one that failed (errno set). */
const char *sbx_child_job_rlimits(pid_t pid, const struct sbx_limits *l, bool cpu)
{
	struct rlimit rl;
	rlim_t used_s = 0;

	/* RLIMIT_CPU counts a process's whole life: a pre-started interpreter's start (far longer
	 * on a slow machine) must not eat the job's backstop. */
	if (pid > 0) {
		clockid_t clk;
		struct timespec ts;

		if (clock_getcpuclockid(pid, &clk) != 0 || clock_gettime(clk, &ts) < 0)
			return "cpu clock";
		used_s = (rlim_t)ts.tv_sec; /* the fraction fits in the 2 s of slack */
	}

	rl.rlim_cur = rl.rlim_max = l->file_size_bytes;
	if (prlimit(pid, RLIMIT_FSIZE, &rl, NULL) < 0)
		return "fsize";
	rl.rlim_cur = rl.rlim_max = l->open_files;
	if (prlimit(pid, RLIMIT_NOFILE, &rl, NULL) < 0)
		return "nofile";
	/* Tasks of the run's user: a backstop above the pids cgroup, which is the real limit. */
	rl.rlim_cur = rl.rlim_max = (rlim_t)l->processes + SBX_NPROC_SLACK;
	if (prlimit(pid, RLIMIT_NPROC, &rl, NULL) < 0)
		return "nproc";
	/* The usual 8 MiB, whatever the broker inherited: an unlimited stack also switches the
	 * kernel to the legacy mmap layout. */
	rl.rlim_cur = 8u << 20;
	rl.rlim_max = l->memory_bytes < rl.rlim_cur ? rl.rlim_cur : l->memory_bytes;
	if (prlimit(pid, RLIMIT_STACK, &rl, NULL) < 0)
		return "stack";
	/* A backstop only: the supervisor enforces CPU for the whole tree from the cgroup. */
	rl.rlim_cur = rl.rlim_max = l->cpu_ms / 1000 + 2 + used_s;
	if (cpu && prlimit(pid, RLIMIT_CPU, &rl, NULL) < 0)
		return "cpu";
	return NULL;
}

/* The program's process: descriptors, limits, credentials, seccomp, exec. l is NULL for a
 * pre-started interpreter (warm.c), which keeps keep3 as its fd 3 across the exec. */
void sbx_child_exec(const struct sbx_child_args *a, const struct sbx_limits *l, int in, int ctl,
		    char *const *argv, char *const *envp)
{
	if (setsid() < 0)
		sbx_child_die(a, "setsid", NULL);
	/* A context's kernel lives on: it starts with every signal at its default (the holder's
	 * ignored SIGPIPE would otherwise reach every process of every cell). */
	if (ctl >= 0) {
		int sig;

		for (sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
	}
	if (in < 0) {
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in < 0)
			sbx_child_die(a, "open", "/dev/null");
	} else if (lseek(in, 0, SEEK_SET) < 0 && errno != ESPIPE) {
		sbx_child_die(a, "rewind stdin", NULL);
	}
	/* The sources may themselves sit on 0-3 (the init closed them), with close-on-exec set:
	 * lift them all above the last target first, then dup2 gives fresh descriptors that
	 * survive exec. A context's kernel also gets its control socket as fd 3. */
	{
		int src[4] = {in, a->out_fd, a->err_out_fd, ctl}, i, n = ctl >= 0 ? 4 : 3;

		for (i = 0; i < n; i++) {
			src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, n);
			if (src[i] < 0)
				sbx_child_die(a, "dup", "stdio");
		}
		for (i = 0; i < n; i++)
			if (dup2(src[i], i) < 0)
				sbx_child_die(a, "dup2", "stdio");
		/* Everything above closes at exec, the error pipe included. */
		if (syscall(SYS_close_range, (unsigned)n, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
			sbx_child_die(a, "close_range", NULL);
	}

	set_rlimit(a, RLIMIT_CORE, 0, "core");
	set_rlimit(a, RLIMIT_MEMLOCK, 0, "memlock");
	set_rlimit(a, RLIMIT_MSGQUEUE, 0, "msgqueue");
	/* No realtime scheduling and no nice below init's: whatever the broker inherited. */
	set_rlimit(a, RLIMIT_RTPRIO, 0, "rtprio");
	set_rlimit(a, RLIMIT_RTTIME, 0, "rttime");
	set_rlimit(a, RLIMIT_NICE, 0, "nice");
	/* Queued signals, POSIX timers included (each holds one): counted for the run's user in its
	 * own user namespace, so this is the whole run's budget, far below the host's. */
	set_rlimit(a, RLIMIT_SIGPENDING, SBX_SIGPENDING, "sigpending");
	/* A pre-started interpreter (l == NULL) gets the job's own limits from the init once the
	 * job has arrived (job_rlimits on its pid): lowering a limit needs no privilege. */
	if (l) {
		/* A context's kernel (ctl >= 0) lives for many cells: its holder limits each cell's
		 * CPU from the cgroup, so it gets no RLIMIT_CPU. */
		const char *what = sbx_child_job_rlimits(0, l, ctl < 0);

		if (what)
			sbx_child_die(a, "setrlimit", what);
	}

	if (chdir(SBX_WORK_DIR) < 0)
		sbx_child_die(a, "chdir", SBX_WORK_DIR);

	/* Lock the uid-0 special cases so no later exec can regain capabilities. */
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		      SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		sbx_child_die(a, "securebits", NULL);
	drop_caps(a);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		sbx_child_die(a, "no_new_privs", NULL);
	/* Last: from here on only the allowlist applies, so nothing after it may need more. */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, a->ioctl_filter, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, a->filter, 0, 0) < 0)
		sbx_child_die(a, "seccomp", NULL);
	execve(argv[0], argv, envp);
	sbx_child_die(a, "execve", argv[0]);
}

/* The job, received into static storage: this is a private copy of the parent's memory and
 * nothing here may allocate. */
static struct sbx_job job;
static char job_strings[SBX_MAX_ARGS_BYTES + 1];
static char *job_argv[SBX_MAX_ARGS + 1], *job_envp[SBX_MAX_ARGS + 1];

static void recv_job(const struct sbx_child_args *a, int *tree, int *in, int *ctl, int *layer)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {&job, sizeof job};
	struct msghdr msg;
	struct cmsghdr *c;
	int fds[4] = {-1, -1, -1, -1}, nfds = 0, k = 0;
	size_t off, got;
	uint32_t i;
	ssize_t n;

	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	do
		n = recvmsg(a->ctl_fd, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		_exit(0); /* the slot is closing: this prepared sandbox was never used */
	if (n != (ssize_t)sizeof job)
		sbx_child_die(a, "receive job", NULL);
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (nfds > 4)
				nfds = 4;
			memcpy(fds, CMSG_DATA(c), (size_t)nfds * sizeof(int));
		}
	if (job.argc == 0 || job.argc > SBX_MAX_ARGS || job.envc > SBX_MAX_ARGS ||
	    job.strings_len > SBX_MAX_ARGS_BYTES || job.has_tree > 1 || job.has_stdin > 1 ||
	    job.has_ctl > 1 || job.has_layer > 1 ||
	    (int)(job.has_tree + job.has_stdin + job.has_ctl + job.has_layer) != nfds) {
		errno = EINVAL;
		sbx_child_die(a, "receive job", "bad header");
	}
	*tree = job.has_tree ? fds[k++] : -1;
	*in = job.has_stdin ? fds[k++] : -1;
	*ctl = job.has_ctl ? fds[k++] : -1;
	*layer = job.has_layer ? fds[k++] : -1;
	for (got = 0; got < job.strings_len; got += (size_t)n) {
		n = read(a->ctl_fd, job_strings + got, job.strings_len - got);
		if (n <= 0)
			sbx_child_die(a, "receive job", "strings");
	}
	job_strings[job.strings_len] = '\0';
	for (i = 0, off = 0; i < job.argc + job.envc; i++) {
		if (off >= job.strings_len) {
			errno = EINVAL;
			sbx_child_die(a, "receive job", "string count");
		}
		if (i < job.argc)
			job_argv[i] = job_strings + off;
		else
			job_envp[i - job.argc] = job_strings + off;
		off += strlen(job_strings + off) + 1;
	}
	job_argv[job.argc] = NULL;
	job_envp[job.envc] = NULL;
}

/* The job's layer (a detached read-only mount made by the slot, run.c attach_layer), or
 * nothing. A layer that cannot be attached ends the run: never without the packages it named. */
static void attach_layer(const struct sbx_child_args *a, int layer)
{
	if (layer < 0)
		return;
	if (syscall(SYS_move_mount, layer, "", AT_FDCWD, SBX_LAYER_DIR, MOVE_MOUNT_F_EMPTY_PATH) <
	    0)
		sbx_child_die(a, "attach", "layer");
	close(layer);
}

/* What a run may write, and its own /proc: mounted fresh by each run's init over the template's
 * empty directories, so nothing of one run is ever seen by the next. */
static void setup_run(const struct sbx_child_args *a)
{
	/* A fresh /proc showing only our processes: no /proc/sys, no sysrq-trigger, no kcore. */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "hidepid=invisible,subset=pid") < 0)
		sbx_child_die(a, "mount", "/proc");
	if (mount("sbx-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, a->tmp_opts) < 0)
		sbx_child_die(a, "mount", "/tmp");
	if (mount("sbx-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, a->shm_opts) < 0)
		sbx_child_die(a, "mount", "/dev/shm");
}

/* prefix followed by v in decimal, without snprintf (not async-signal-safe). */
static void opts_u64(char *buf, size_t len, const char *prefix, uint64_t v)
{
	char digits[24];
	size_t k;
	int i = 0;

	sbx_child_copy_str(buf, len, prefix);
	k = strlen(buf);
	do
		digits[i++] = (char)('0' + v % 10);
	while ((v /= 10) && i < 23);
	while (i > 0 && k + 1 < len)
		buf[k++] = digits[--i];
	buf[k] = '\0';
}

static void attach_work(const struct sbx_child_args *a, int tree)
{
	char opts[96];

	if (tree >= 0) {
		if (syscall(SYS_move_mount, tree, "", AT_FDCWD, SBX_WORK_DIR,
			    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			sbx_child_die(a, "attach", "work directory");
		close(tree);
		return;
	}
	opts_u64(opts, sizeof opts, "mode=0755,nr_inodes=16384,size=", job.limits.tmp_bytes);
	if (mount("sbx-work", SBX_WORK_DIR, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		sbx_child_die(a, "mount", "work tmpfs");
}

/* Keep only our own pipes: the slot's listening socket, its log and its cgroup directories must
 * not sit in a process that lives inside the sandbox. */
void sbx_child_close_others(const struct sbx_child_args *a)
{
	int keep[] = {a->ctl_fd, a->sync_fd, a->err_fd, a->status_fd, a->out_fd, a->err_out_fd};
	int n = (int)(sizeof keep / sizeof *keep), i, j;
	unsigned lo = 0;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

/* The program's pid, for the SIGINT the init passes on (below). */
static volatile pid_t main_pid;

/* A context's holder interrupts a cell by signalling the init (the only process of the sandbox it
 * knows by pidfd); the init passes the SIGINT on to the kernel. A pid namespace's init gets a
 * signal from outside only when it has a handler, so runs' inits, which never get one, behave
 * as before; a program signalling its own init gains nothing it could not do directly. */
static void forward_sigint(int sig)
{
	int e = errno;

	if (main_pid > 0)
		kill(main_pid, sig);
	errno = e;
}

void sbx_child_become_inside(const struct sbx_child_args *a, bool inheritable)
{
	char go;

	/* Nothing of the supervisor's signal mask (a context's holder blocks SIGINT and SIGTERM for
	 * its signalfd): the init must take the SIGINT it passes on, the program its own. */
	{
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}

	if (read(a->sync_fd, &go, 1) != 1)
		_exit(127); /* the parent gave up before the maps were written */
	close(a->sync_fd);
	/* Keep the namespace's full capability set across the switch to the inside uid: the mounts
	 * need it, and files created for the root must belong to a mapped id. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		sbx_child_die(a, "keepcaps", NULL);
	if (setresgid(SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0 ||
	    setresuid(SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0)
		sbx_child_die(a, "switch to inside uid", NULL);
	{
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];

		if (syscall(SYS_capget, &hdr, data) < 0)
			sbx_child_die(a, "capget", NULL);
		data[0].effective = data[0].permitted;
		data[1].effective = data[1].permitted;
		if (inheritable) {
			data[0].inheritable = data[0].permitted;
			data[1].inheritable = data[1].permitted;
		}
		if (syscall(SYS_capset, &hdr, data) < 0)
			sbx_child_die(
			    a, inheritable ? "raise capabilities" : "raise effective capabilities",
			    NULL);
	}
}

void sbx_child_main(const struct sbx_child_args *a)
{
	pid_t pid, warm_pid = -1;
	int status = 0, tree = -1, in = -1, ctl = -1, warm_sock = -1, layer = -1;

	sbx_child_close_others(a);
	sbx_child_become_inside(a, false);
	/* Only now: changing ids or gaining capabilities clears the parent-death signal. Should the
	 * slot die before this line, the job read below sees EOF and we leave. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		sbx_child_die(a, "pdeathsig", NULL);
	setup_run(a);
	if (sethostname("sandbox", 7) < 0)
		sbx_child_die(a, "sethostname", NULL);
	/* No one inside may read init's memory or environment. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sbx_child_die(a, "dumpable", NULL);

	/* Untrusted work yields the CPU to the service itself (nginx, workers, health checks) when
	 * the machine is saturated; on an idle machine nice changes nothing. */
	if (a->warm) {
		sbx_child_yield_cpu(a);
		warm_pid = sbx_child_warm_prestart(a, &warm_sock);
	}

	/* Ready: the slot may now hand us a job at any time. */
	if (write(a->ctl_fd, "r", 1) != 1)
		sbx_child_die(a, "report ready", NULL);
	recv_job(a, &tree, &in, &ctl, &layer);
	attach_work(a, tree);
	attach_layer(a, layer);
	if (job.limits.tmp_bytes != a->tmp_bytes) {
		char opts[96];

		/* A job that asks for another /tmp size gets it by remount, so the prepared sandbox
		 * stays usable whatever the request. */
		opts_u64(opts, sizeof opts, "size=", job.limits.tmp_bytes);
		if (mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			sbx_child_die(a, "remount", "/tmp");
		if (mount(NULL, "/dev/shm", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			sbx_child_die(a, "remount", "/dev/shm");
	}

	if (warm_pid > 0) {
		/* The pre-started interpreter becomes the program if the job is its kind of run
		 * (never a context's kernel); else it goes, and the program starts cold. */
		if (ctl < 0 && sbx_child_warm_handover(a, warm_pid, warm_sock, in, &job,
						       job_strings, job_argv, job_envp) == 0) {
			main_pid = warm_pid;
		} else {
			kill(warm_pid, SIGKILL);
			while (waitpid(warm_pid, NULL, __WALL) < 0 && errno == EINTR) {
			}
		}
		close(warm_sock);
	}
	if (main_pid <= 0) {
		/* Untrusted work yields the CPU to the service itself (nginx, workers, health
		 * checks) when the machine is saturated; on an idle machine nice changes nothing.
		 */
		sbx_child_yield_cpu(a);
		pid = fork();
		if (pid < 0)
			sbx_child_die(a, "fork", "program");
		if (pid == 0)
			sbx_child_exec(a, &job.limits, in, ctl, job_argv, job_envp);
		main_pid = pid;
	}
	if (ctl >= 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = forward_sigint;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGINT, &sa, NULL) < 0)
			sbx_child_die(a, "sigaction", "SIGINT");
	}

	/* init from here on: hold no capability, keep nothing but the status pipe (as fd 3). */
	if (a->status_fd != 3 && dup2(a->status_fd, 3) < 0)
		_exit(126);
	syscall(SYS_close_range, 4, ~0U, 0);
	{
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];

		memset(data, 0, sizeof data);
		(void)syscall(SYS_capset, &hdr, data);
	}
	for (;;) {
		pid = waitpid(-1, &status, __WALL);
		if (pid == main_pid)
			break;
		if (pid < 0 && errno != EINTR)
			_exit(126);
	}
	if (write(3, &status, sizeof status) != sizeof status)
		_exit(126);
	/* Our exit makes the kernel kill whatever the program left behind. */
	_exit(0);
}
