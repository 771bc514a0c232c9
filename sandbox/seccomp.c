/* seccomp.c: the syscall allowlist, compiled once per slot into a BPF program that the child
 * loads with a single prctl (no allocation between clone and exec).
 *
 * Policy: native x86-64 ABI only (other arches, i386 via int 0x80 included, kill the process);
 * unknown syscalls fail with ENOSYS so runtimes fall back gracefully; privileged or
 * kernel-attack-surface syscalls fail with EPERM or kill; a few get argument filters. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "internal.h"

/* Ordinary process, file, memory, time, signal and local-IPC calls. */
static const char *const allowed[] = {
    "read",
    "write",
    "close",
    "stat",
    "fstat",
    "lstat",
    "poll",
    "lseek",
    "mmap",
    "mprotect",
    "munmap",
    "brk",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "access",
    "pipe",
    "select",
    "sched_yield",
    "mremap",
    "msync",
    "mincore",
    "madvise",
    "shmget",
    "shmat",
    "shmctl",
    "dup",
    "dup2",
    "pause",
    "nanosleep",
    "getitimer",
    "alarm",
    "setitimer",
    "getpid",
    "sendfile",
    "connect",
    "accept",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "shutdown",
    "bind",
    "listen",
    "getsockname",
    "getpeername",
    "setsockopt",
    "getsockopt",
    "fork",
    "vfork",
    "execve",
    "exit",
    "wait4",
    "kill",
    "uname",
    "semget",
    "semop",
    "semctl",
    "shmdt",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "fcntl",
    "flock",
    "fsync",
    "fdatasync",
    "truncate",
    "ftruncate",
    "getdents",
    "getcwd",
    "chdir",
    "fchdir",
    "rename",
    "mkdir",
    "rmdir",
    "link",
    "unlink",
    "symlink",
    "readlink",
    "chown",
    "fchown",
    "lchown",
    "umask",
    "gettimeofday",
    "getrlimit",
    "getrusage",
    "times",
    "getuid",
    "getgid",
    "setuid",
    "setgid",
    "geteuid",
    "getegid",
    "setpgid",
    "getppid",
    "getpgrp",
    "setsid",
    "setreuid",
    "setregid",
    "getgroups",
    "setgroups",
    "setresuid",
    "getresuid",
    "setresgid",
    "getresgid",
    "getpgid",
    "setfsuid",
    "setfsgid",
    "getsid",
    "capget",
    "capset",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigqueueinfo",
    "rt_sigsuspend",
    "sigaltstack",
    "utime",
    "personality",
    "statfs",
    "fstatfs",
    "getpriority",
    "setpriority",
    "sched_setparam",
    "sched_getparam",
    "sched_setscheduler",
    "sched_getscheduler",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    "mlock",
    "munlock",
    "mlockall",
    "munlockall",
    "prctl",
    "arch_prctl",
    "setrlimit",
    "sync",
    "gettid",
    "readahead",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "tkill",
    "time",
    "futex",
    "sched_setaffinity",
    "sched_getaffinity",
    "epoll_create",
    "getdents64",
    "set_tid_address",
    "restart_syscall",
    "semtimedop",
    "fadvise64",
    "timer_create",
    "timer_settime",
    "timer_gettime",
    "timer_getoverrun",
    "timer_delete",
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "exit_group",
    "epoll_wait",
    "epoll_ctl",
    "tgkill",
    "utimes",
    "mbind",
    "set_mempolicy",
    "get_mempolicy",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "waitid",
    "inotify_init",
    "inotify_add_watch",
    "inotify_rm_watch",
    "mkdirat",
    "fchownat",
    "futimesat",
    "newfstatat",
    "unlinkat",
    "renameat",
    "linkat",
    "symlinkat",
    "readlinkat",
    "faccessat",
    "pselect6",
    "ppoll",
    "set_robust_list",
    "get_robust_list",
    "splice",
    "tee",
    "sync_file_range",
    "vmsplice",
    "utimensat",
    "epoll_pwait",
    "signalfd",
    "timerfd_create",
    "eventfd",
    "fallocate",
    "timerfd_settime",
    "timerfd_gettime",
    "accept4",
    "signalfd4",
    "eventfd2",
    "epoll_create1",
    "dup3",
    "pipe2",
    "inotify_init1",
    "preadv",
    "pwritev",
    "rt_tgsigqueueinfo",
    "recvmmsg",
    "syncfs",
    "sendmmsg",
    "getcpu",
    "sched_setattr",
    "sched_getattr",
    "renameat2",
    "seccomp",
    "getrandom",
    "memfd_create",
    "execveat",
    "membarrier",
    "mlock2",
    "copy_file_range",
    "preadv2",
    "pwritev2",
    "pkey_mprotect",
    "pkey_alloc",
    "pkey_free",
    "statx",
    "rseq",
    "pidfd_send_signal",
    "pidfd_open",
    "close_range",
    "faccessat2",
    "epoll_pwait2",
    "futex_waitv",
    "sethostname",
    "setdomainname",
    "getpmsg",
    "sched_getaffinity",
    "sync_file_range",
};

/* Deliberately absent from the allowlist, so the default ENOSYS answers (runtimes read "not
 * implemented" and fall back), because each reaches a pool shared by the whole host with no
 * per-run limit:
 *   io_setup, io_submit, io_getevents, io_pgetevents, io_cancel, io_destroy: native AIO events
 *     come from one host-wide pool (fs.aio-max-nr); one run could reserve all of it. Python,
 *     Node (libuv uses threads), bash and gcc do not use native AIO; glibc's aio_* uses threads.
 *   sysinfo: host-wide load, uptime, free RAM and the host's process count, a channel between
 *     tenants (the same data /proc hides: its subset=pid mount has no loadavg, meminfo, uptime).
 *     libuv's os.totalmem()/os.loadavg() answer 0; glibc's sysconf(_SC_PHYS_PAGES) does not
 *     check the call and returns an undefined value (no runtime we ship depends on it).
 * What a run may still learn about the host: README.md, "What a run can learn about the host". */

/* Refused with EPERM: what a contained program has no business doing, where a clear error is
 * kinder than a kill (runtimes probe some of these). */
static const char *const refused[] = {
    "ptrace", /* inspecting or steering other processes */
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    "unshare",
    "setns", /* new or foreign namespaces */
    "mount",
    "umount2",
    "pivot_root",
    "chroot", /* the filesystem view is fixed */
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register", /* large attack surface; libuv
			   falls back */
    "clock_settime",
    "clock_adjtime",
    "settimeofday",
    "adjtimex", /* host time */
    "vhangup",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "nfsservctl",
    "modify_ldt",
    "fanotify_init",
    "name_to_handle_at",
    "memfd_secret",
    "landlock_create_ruleset",
    "landlock_add_rule",
    "landlock_restrict_self",
    "userfaultfd",
    "perf_event_open",
    "lookup_dcookie",
    "quotactl",
    "quotactl_fd",
    "acct",
    "syslog",
};

/* Kill the process: only ever used to attack the kernel or the host. */
static const char *const killed[] = {
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "open_by_handle_at",
    "iopl",
    "ioperm",
    "create_module",
    "get_kernel_syms",
    "query_module",
};

static int add_list(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t n,
		    char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		int rc;

		if (nr == __NR_SCMP_ERROR)
			continue; /* unknown to this libseccomp: the default (ENOSYS) applies */
		rc = seccomp_rule_add(ctx, action, nr, 0);
		if (rc < 0 && rc != -EEXIST) {
			sbx_set_error(err, errlen, "seccomp rule for %s: %s", names[i],
				      strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* Compile ctx to BPF in memory (malloc'ed prog->filter, owned by the caller). 0 or -1. */
static int export(scmp_filter_ctx ctx, struct sock_fprog *prog, char *err, size_t errlen)
{
	struct sock_filter *f = NULL;
	int fd = memfd_create("sbx-bpf", MFD_CLOEXEC), rc = -1;
	off_t size;

	if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0) {
		sbx_set_error(err, errlen, "seccomp export failed");
		goto out;
	}
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter) != 0) {
		sbx_set_error(err, errlen, "seccomp export: bad size");
		goto out;
	}
	f = malloc((size_t)size);
	if (!f || pread(fd, f, (size_t)size, 0) != size) {
		free(f);
		sbx_set_error(err, errlen, "seccomp export: read failed");
		goto out;
	}
	prog->filter = f;
	prog->len = (unsigned short)(size / sizeof(struct sock_filter));
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

#define RULE_NR(ctx, act, nr, name, ...)                                                           \
	do {                                                                                       \
		int rc_ = seccomp_rule_add(ctx, act, nr, __VA_ARGS__);                             \
		if (rc_ < 0) {                                                                     \
			sbx_set_error(err, errlen, "seccomp rule for %s: %s", name,                \
				      strerror(-rc_));                                             \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)
#define RULE(ctx, act, name, ...) RULE_NR(ctx, act, SCMP_SYS(name), #name, __VA_ARGS__)

/* fchmodat2 (Linux 6.6; glibc 2.39 calls it for fchmodat with flags) is newer than this
 * libseccomp's syscall table: by number, x86-64 only (other ABIs are killed anyway). */
#define SBX_NR_FCHMODAT2 452

int sbx_seccomp_build(struct sock_fprog *prog, char *err, size_t errlen)
{
	const uint64_t ns_flags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
				  CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME;
	scmp_filter_ctx ctx = NULL;
	int rc = -1;

	memset(prog, 0, sizeof *prog);
	ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	if (!ctx) {
		sbx_set_error(err, errlen, "seccomp_init failed");
		goto out;
	}
	/* Another ABI would bypass every rule below: kill on sight (i386 via int 0x80, x32). */
	/* A binary tree instead of a linear scan: ~300 rules would cost every syscall a walk. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0) {
		sbx_set_error(err, errlen, "seccomp attributes");
		goto out;
	}
	if (add_list(ctx, SCMP_ACT_ALLOW, allowed, sizeof allowed / sizeof *allowed, err, errlen) ||
	    add_list(ctx, SCMP_ACT_ERRNO(EPERM), refused, sizeof refused / sizeof *refused, err,
		     errlen) ||
	    add_list(ctx, SCMP_ACT_KILL_PROCESS, killed, sizeof killed / sizeof *killed, err,
		     errlen))
		goto out;

	/* clone: threads and processes yes, namespaces never. clone3 hides its flags in memory
	 * that seccomp cannot read: ENOSYS makes glibc fall back to clone. */
	RULE(ctx, SCMP_ACT_ALLOW, clone, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags, 0));
	{
		static const uint64_t each[] = {CLONE_NEWNS,	 CLONE_NEWUSER, CLONE_NEWPID,
						CLONE_NEWNET,	 CLONE_NEWIPC,	CLONE_NEWUTS,
						CLONE_NEWCGROUP, CLONE_NEWTIME};
		size_t i;

		for (i = 0; i < sizeof each / sizeof *each; i++)
			RULE(ctx, SCMP_ACT_ERRNO(EPERM), clone, 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, each[i], each[i]));
	}
	/* clone3: no rule, so the default ENOSYS applies (libseccomp refuses a rule equal to it).
	 */

	/* prlimit64: only on the caller itself (pid 0; glibc's getrlimit/setrlimit, Python's
	 * resource module and bash's ulimit all pass 0). On any other pid it could lower the run's
	 * init's limits (same uid) and kill it, which would end the run as a sandbox failure, or
	 * read other processes' limits. A pid_t is 32 bits: compare the low half only, as the
	 * kernel does. */
	RULE(ctx, SCMP_ACT_ALLOW, prlimit64, 1, SCMP_A0_32(SCMP_CMP_EQ, 0));
	RULE(ctx, SCMP_ACT_ERRNO(EPERM), prlimit64, 1, SCMP_A0_32(SCMP_CMP_NE, 0));

	/* Sockets: local only. No inet (the net namespace is empty anyway), packet, netlink, vsock.
	 */
	RULE(ctx, SCMP_ACT_ALLOW, socket, 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	RULE(ctx, SCMP_ACT_ALLOW, socketpair, 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));

	/* ioctl is allowed here; the few refused requests live in a second filter (below), since
	 * libseccomp drops conditional rules next to an unconditional one. */
	RULE(ctx, SCMP_ACT_ALLOW, ioctl, 0);

	/* No setuid/setgid bits on files, however made: /work is stored on the host as the service
	 * user. Opening without creating ignores the mode; creating needs a mode without them.
	 * openat2 hides its mode in memory seccomp cannot read: ENOSYS (glibc does not use it). */
	{
		const uint64_t setid = S_ISUID | S_ISGID, creates = O_CREAT | __O_TMPFILE;

		RULE(ctx, SCMP_ACT_ALLOW, chmod, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, fchmod, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, fchmodat, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE_NR(ctx, SCMP_ACT_ALLOW, SBX_NR_FCHMODAT2, "fchmodat2", 1,
			SCMP_A2(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, open, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, creates, 0));
		RULE(ctx, SCMP_ACT_ALLOW, open, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, openat, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, creates, 0));
		RULE(ctx, SCMP_ACT_ALLOW, openat, 1, SCMP_A3(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, creat, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, mknod, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, 0));
		RULE(ctx, SCMP_ACT_ALLOW, mknodat, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, setid, 0));
		/* ... and a set-id mode is refused with EPERM, as the kernel itself would refuse
		 * it, rather than the ENOSYS of the default (a program would read "not
		 * implemented"). A masked compare takes one value, hence one rule per non-zero
		 * combination. */
		for (size_t v = 0; v < 3; v++) {
			const uint64_t ids[] = {S_ISUID, S_ISGID, S_ISUID | S_ISGID};
			const uint64_t made[] = {O_CREAT, __O_TMPFILE, O_CREAT | __O_TMPFILE};
			const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);

			RULE(ctx, eperm, chmod, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			RULE(ctx, eperm, fchmod, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			RULE(ctx, eperm, fchmodat, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			RULE_NR(ctx, eperm, SBX_NR_FCHMODAT2, "fchmodat2", 1,
				SCMP_A2(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			RULE(ctx, eperm, creat, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			RULE(ctx, eperm, mknod, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			RULE(ctx, eperm, mknodat, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			for (size_t c = 0; c < 3; c++) {
				RULE(ctx, eperm, open, 2,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, creates, made[c]),
				     SCMP_A2(SCMP_CMP_MASKED_EQ, setid, ids[v]));
				RULE(ctx, eperm, openat, 2,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, creates, made[c]),
				     SCMP_A3(SCMP_CMP_MASKED_EQ, setid, ids[v]));
			}
		}
	}

	/* Export once; the child only hands the program to the kernel. */
	if (export(ctx, prog, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	seccomp_release(ctx);
	return rc;
}

/* The refused ioctl requests, as a filter of its own that allows everything else; the kernel
 * applies the strictest answer of all loaded filters. */
int sbx_seccomp_build_ioctl(struct sock_fprog *prog, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = -1;

	memset(prog, 0, sizeof *prog);
	if (!ctx) {
		sbx_set_error(err, errlen, "seccomp_init failed");
		goto out;
	}
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0) {
		sbx_set_error(err, errlen, "seccomp attributes");
		goto out;
	}
	/* TIOCSTI / TIOCLINUX push input into a terminal: compare the low 32 bits only, since the
	 * kernel ignores the high ones. */
	RULE(ctx, SCMP_ACT_ERRNO(EPERM), ioctl, 1,
	     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	RULE(ctx, SCMP_ACT_ERRNO(EPERM), ioctl, 1,
	     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	/* btrfs ioctls (type 0x94): a subvolume or snapshot made inside /work would sit outside the
	 * session's qgroup and escape its quota. FICLONE shares the type; cp falls back to copying.
	 */
	RULE(ctx, SCMP_ACT_ERRNO(EPERM), ioctl, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00u, 0x9400u));
	rc = export(ctx, prog, err, errlen);
out:
	seccomp_release(ctx);
	return rc;
}
