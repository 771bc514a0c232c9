"""probes.py: C sources of the small hostile programs the sandbox tests compile (see sbxtest.py).

SYSPROBE runs each named attempt in its own forked child (so a seccomp kill ends only that
attempt) and prints one line per attempt: "NAME ok" (the call succeeded: a hole), "NAME EPERM"
(refused with that errno), "NAME SIGSYS" (killed by that signal) or "NAME unavailable" (the
setup the attempt needs does not exist inside, e.g. no pty: nothing to attack).
"""
import os
import subprocess
import tempfile

SYSPROBE = r"""
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/sched.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNAVAILABLE 252
static volatile long secret_word = 0x5eb0;

static long int80(long nr, long a, long b, long c)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	if (r < 0 && r > -4096) { errno = (int)-r; return -1; }
	return r;
}

/* A pty that is our controlling terminal, so TIOCSTI would really inject (legacy_tiocsti=1). */
static int ctty_pty(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m)) return -1;
	setsid();
	return open(ptsname(m), O_RDWR);
}

static long sti(int fd, unsigned long high)
{
	char c = '#';
	if (fd < 0) _exit(UNAVAILABLE);
	return syscall(SYS_ioctl, fd, high | (unsigned long)TIOCSTI, &c);
}

static long linux_ioctl(int fd, unsigned long high)
{
	char sub = 7; /* TIOCL_GETSHIFTSTATE */
	if (fd < 0) _exit(UNAVAILABLE);
	return syscall(SYS_ioctl, fd, high | (unsigned long)TIOCLINUX, &sub);
}

static long attempt(const char *n)
{
	pid_t pp = getppid();
	if (!strcmp(n, "ptrace_attach_parent") || !strcmp(n, "ptrace_attach_init")) {
		pid_t t = n[14] == 'p' ? pp : 1;
		long r = syscall(SYS_ptrace, PTRACE_ATTACH, t, 0, 0);
		if (r == 0) { /* a hole: let the victim go on so the report gets out */
			waitpid(t, 0, __WALL);
			syscall(SYS_ptrace, PTRACE_DETACH, t, 0, SIGCONT);
		}
		return r;
	}
	if (!strcmp(n, "ptrace_traceme")) return syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
	if (!strcmp(n, "process_vm_readv")) {
		long buf;
		struct iovec l = {&buf, sizeof buf}, r = {(void *)&secret_word, sizeof buf};
		return syscall(SYS_process_vm_readv, pp, &l, 1, &r, 1, 0);
	}
	if (!strcmp(n, "process_vm_writev")) {
		long buf = 1;
		struct iovec l = {&buf, sizeof buf}, r = {(void *)&secret_word, sizeof buf};
		return syscall(SYS_process_vm_writev, pp, &l, 1, &r, 1, 0);
	}
	if (!strcmp(n, "unshare_user")) return syscall(SYS_unshare, CLONE_NEWUSER);
	if (!strcmp(n, "unshare_mount")) return syscall(SYS_unshare, CLONE_NEWNS);
	if (!strcmp(n, "unshare_net")) return syscall(SYS_unshare, CLONE_NEWNET);
	if (!strcmp(n, "unshare_pid")) return syscall(SYS_unshare, CLONE_NEWPID);
	if (!strcmp(n, "unshare_ipc")) return syscall(SYS_unshare, CLONE_NEWIPC);
	if (!strcmp(n, "unshare_uts")) return syscall(SYS_unshare, CLONE_NEWUTS);
	if (!strcmp(n, "unshare_cgroup")) return syscall(SYS_unshare, CLONE_NEWCGROUP);
	if (!strcmp(n, "unshare_time")) return syscall(SYS_unshare, 0x00000080);
	if (!strcmp(n, "clone_newuser") || !strcmp(n, "clone_newns")) {
		long f = (n[9] == 'u' ? CLONE_NEWUSER : CLONE_NEWNS) | SIGCHLD;
		long r = syscall(SYS_clone, f, 0, 0, 0, 0);
		if (r == 0) _exit(0);
		if (r > 0) waitpid(r, 0, 0);
		return r;
	}
	if (!strcmp(n, "clone_newuser_high")) {
		long r = syscall(SYS_clone, (1ul << 32) | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
		if (r == 0) _exit(0);
		if (r > 0) waitpid(r, 0, 0);
		return r;
	}
	if (!strcmp(n, "unshare_user_high")) return syscall(SYS_unshare, (1ul << 32) | CLONE_NEWUSER);
	if (!strcmp(n, "socket_inet")) return syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	if (!strcmp(n, "socket_inet_high"))
		return syscall(SYS_socket, (1ul << 32) | AF_INET, SOCK_STREAM, 0);
	if (!strcmp(n, "socket_netlink_high"))
		return syscall(SYS_socket, (1ul << 32) | AF_NETLINK, SOCK_RAW, 0);
	if (!strcmp(n, "fchmodat_suid_high")) {
		int fd = open("/tmp/suid", O_CREAT | O_WRONLY, 0644);
		close(fd);
		return syscall(SYS_fchmodat, AT_FDCWD, "/tmp/suid", (1ul << 32) | 04755, 0);
	}
	if (!strcmp(n, "clone3")) {
		struct clone_args a;
		memset(&a, 0, sizeof a);
		a.exit_signal = SIGCHLD;
		long r = syscall(SYS_clone3, &a, sizeof a);
		if (r == 0) _exit(0);
		if (r > 0) waitpid(r, 0, 0);
		return r;
	}
	if (!strcmp(n, "setns_net")) {
		int fd = open("/proc/self/ns/net", O_RDONLY);
		if (fd < 0) _exit(UNAVAILABLE);
		return syscall(SYS_setns, fd, 0);
	}
	if (!strcmp(n, "mount_tmpfs")) return mount("none", "/tmp", "tmpfs", 0, 0);
	if (!strcmp(n, "remount_usr_rw")) return mount(0, "/usr", 0, MS_REMOUNT | MS_BIND, 0);
	if (!strcmp(n, "umount_proc")) return umount2("/proc", MNT_DETACH);
	if (!strcmp(n, "fsopen")) return syscall(SYS_fsopen, "tmpfs", 0);
	if (!strcmp(n, "open_tree")) return syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* CLONE */);
	if (!strcmp(n, "pivot_root")) return syscall(SYS_pivot_root, "/tmp", "/tmp");
	if (!strcmp(n, "chroot")) return chroot("/tmp");
	if (!strcmp(n, "bpf")) {
		union bpf_attr a;
		memset(&a, 0, sizeof a);
		a.map_type = BPF_MAP_TYPE_ARRAY; a.key_size = 4; a.value_size = 4; a.max_entries = 1;
		return syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	}
	if (!strcmp(n, "perf_event_open")) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a; a.type = PERF_TYPE_SOFTWARE; a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.exclude_kernel = 1; a.exclude_hv = 1;
		return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	}
	if (!strcmp(n, "userfaultfd")) return syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* USER_MODE_ONLY */);
	if (!strcmp(n, "io_uring_setup")) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		return syscall(SYS_io_uring_setup, 4, &p);
	}
	if (!strcmp(n, "keyctl")) return syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "sbx");
	if (!strcmp(n, "add_key"))
		return syscall(SYS_add_key, "user", "sbx", "data", 4, KEY_SPEC_PROCESS_KEYRING);
	if (!strcmp(n, "kexec_load")) return syscall(SYS_kexec_load, 0, 0, 0, 0);
	if (!strcmp(n, "kexec_file_load")) return syscall(SYS_kexec_file_load, -1, -1, 0, "", 0);
	if (!strcmp(n, "init_module")) return syscall(SYS_init_module, "", 0, "");
	if (!strcmp(n, "finit_module")) {
		int fd = open("/proc/self/exe", O_RDONLY);
		return syscall(SYS_finit_module, fd, "", 0);
	}
	if (!strcmp(n, "delete_module")) return syscall(SYS_delete_module, "loop", O_NONBLOCK);
	if (!strcmp(n, "reboot"))
		return syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2,
		               LINUX_REBOOT_CMD_CAD_OFF, 0);
	if (!strcmp(n, "swapon")) return syscall(SYS_swapon, "/tmp/swapfile", 0);
	if (!strcmp(n, "swapoff")) return syscall(SYS_swapoff, "/tmp/swapfile");
	if (!strcmp(n, "open_by_handle_at")) {
		struct { unsigned int bytes; int type; unsigned char h[8]; } fh = {8, 1, {2, 0}};
		int mfd = open("/", O_RDONLY | O_DIRECTORY);
		return syscall(SYS_open_by_handle_at, mfd, &fh, O_RDONLY);
	}
	if (!strcmp(n, "acct")) return syscall(SYS_acct, "/tmp/acct");
	if (!strcmp(n, "syslog_read")) { char b[64]; return syscall(SYS_syslog, 3, b, sizeof b); }
	if (!strcmp(n, "iopl")) return syscall(SYS_iopl, 3);
	if (!strcmp(n, "ioperm")) return syscall(SYS_ioperm, 0x80, 1, 1);
	if (!strcmp(n, "mknod_mem")) return mknod("/tmp/mem", S_IFCHR | 0666, makedev(1, 1));
	if (!strcmp(n, "mknod_disk")) return mknod("/work/disk", S_IFBLK | 0666, makedev(253, 0));
	if (!strcmp(n, "fanotify_init")) return syscall(SYS_fanotify_init, 0, O_RDONLY);
	if (!strcmp(n, "setuid0")) return syscall(SYS_setuid, 0);
	if (!strcmp(n, "setgid0")) return syscall(SYS_setgid, 0);
	if (!strcmp(n, "setresuid0")) return syscall(SYS_setresuid, 0, 0, 0);
	if (!strcmp(n, "setgroups")) { gid_t g = 0; return syscall(SYS_setgroups, 1, &g); }
	if (!strcmp(n, "sethostname")) return syscall(SYS_sethostname, "sbx-evil", 8);
	if (!strcmp(n, "setdomainname")) return syscall(SYS_setdomainname, "sbx-evil", 8);
	if (!strcmp(n, "clock_settime")) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t); /* the same time: harmless even if it went through */
		return syscall(SYS_clock_settime, CLOCK_REALTIME, &t);
	}
	if (!strcmp(n, "settimeofday")) {
		struct timeval tv;
		gettimeofday(&tv, 0);
		return syscall(SYS_settimeofday, &tv, 0);
	}
	if (!strcmp(n, "adjtimex_set")) {
		struct timex t;
		memset(&t, 0, sizeof t);
		if (adjtimex(&t) < 0) return -1; /* read the current frequency, then set it unchanged */
		t.modes = ADJ_FREQUENCY;
		return syscall(SYS_adjtimex, &t);
	}
	if (!strcmp(n, "int80_getpid")) return int80(20, 0, 0, 0);
	if (!strcmp(n, "int80_setuid0")) return int80(23, 0, 0, 0);
	if (!strcmp(n, "int80_unshare")) return int80(310, CLONE_NEWUSER, 0, 0);
	if (!strcmp(n, "x32_getpid")) return syscall(0x40000000 | 39);
	if (!strcmp(n, "tiocsti_fd0")) return sti(0, 0);
	if (!strcmp(n, "tiocsti_fd1")) return sti(1, 0);
	if (!strcmp(n, "tiocsti_fd2")) return sti(2, 0);
	if (!strcmp(n, "tiocsti_fd0_high")) return sti(0, 1ul << 32);
	if (!strcmp(n, "tiocsti_devtty")) return sti(open("/dev/tty", O_RDWR), 0);
	if (!strcmp(n, "tiocsti_pty")) return sti(ctty_pty(), 0);
	if (!strcmp(n, "tiocsti_pty_high")) return sti(ctty_pty(), 1ul << 32);
	if (!strcmp(n, "tiocsti_pty_high2")) return sti(ctty_pty(), 0xffffffff00000000ul);
	if (!strcmp(n, "tioclinux_fd1")) return linux_ioctl(1, 0);
	if (!strcmp(n, "tioclinux_pty")) return linux_ioctl(ctty_pty(), 0);
	if (!strcmp(n, "tioclinux_pty_high")) return linux_ioctl(ctty_pty(), 1ul << 32);
	fprintf(stderr, "unknown attempt %s\n", n);
	_exit(253);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) { printf("%s fork-failed\n", argv[i]); continue; }
		if (pid == 0) {
			errno = 0;
			long r = attempt(argv[i]);
			_exit(r == -1 ? (errno & 0xff) : 250);
		}
		int st;
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st)) printf("%s SIG%s\n", argv[i], sigabbrev_np(WTERMSIG(st)));
		else if (WEXITSTATUS(st) == 250) printf("%s ok\n", argv[i]);
		else if (WEXITSTATUS(st) == UNAVAILABLE) printf("%s unavailable\n", argv[i]);
		else if (WEXITSTATUS(st) == 253) printf("%s unknown\n", argv[i]);
		else {
			const char *e = strerrorname_np(WEXITSTATUS(st));
			printf("%s %s\n", argv[i], e ? e : "E?");
		}
	}
	return 0;
}
"""

# Burns CPU in N threads (argv[1]), each until its own CPU clock reaches MS milliseconds
# (argv[2], "0": forever), then prints its own getrusage CPU time (all threads) in ms. Work is
# sized in CPU time, not in loop iterations, so the amount is the same on a fast or a slow CPU.
BURN = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
static long target_ms;
static long thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static void *spin(void *a)
{
	volatile unsigned long x = 0;
	(void)a;
	do {
		for (long i = 0; i < 100000; i++) x += i * 2654435761u;
	} while (target_ms == 0 || thread_cpu_ms() < target_ms);
	return 0;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	target_ms = argc > 2 ? atol(argv[2]) : 0;
	pthread_t t[64];
	for (int i = 0; i < n && i < 64; i++) pthread_create(&t[i], 0, spin, 0);
	for (int i = 0; i < n && i < 64; i++) pthread_join(t[i], 0);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"self_cpu_ms\": %ld, \"self_maxrss_kb\": %ld}\n",
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000, ru.ru_maxrss);
	return 0;
}
"""

# Touches argv[1] MiB of memory (every page written), then reports its own peak RSS.
TOUCH = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
	char *p = malloc(mb << 20);
	if (!p) { puts("{\"malloc\": \"failed\"}"); return 1; }
	memset(p, 1, mb << 20);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"self_maxrss_kb\": %ld, \"touched_mb\": %zu}\n", ru.ru_maxrss, mb);
	return p[mb] == 1 ? 0 : 2;
}
"""

SEGV = r"""
int main(void) { *(volatile int *)0 = 1; return 0; }
"""

# daemon(3) then outlive the run: append to /work/hb-daemon every 100 ms.
DAEMON = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(void)
{
	if (daemon(0, 0) < 0) return 1;
	for (;;) {
		int fd = open("/work/hb-daemon", O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) { write(fd, "x", 1); close(fd); }
		usleep(100000);
	}
}
"""

# Who am I, with what privilege: run setuid-root or with file capabilities to see nothing gained.
WHOAMI = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	char line[256], caps[256] = "";
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "CapEff:", 7) || !strncmp(line, "CapPrm:", 7))
			for (char *c = line + 7; *c; c++)
				if (*c != '\t' && *c != ' ' && *c != '\n')
					strncat(caps, c, 1);
	printf("{\"euid\": %d, \"uid\": %d, \"egid\": %d, \"caps\": \"%s\", \"shadow\": %d}\n",
	       (int)geteuid(), (int)getuid(), (int)getegid(), caps, access("/etc/shadow", R_OK));
	return 0;
}
"""

# SysV and POSIX IPC: create (argv[1] == "make") or look for (argv[1] == "find") a message queue,
# shared memory and semaphore under fixed keys/names; print one JSON object.
IPC = r"""
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>
#define KEY 0x5b5b5b
static const char *res(int r) { return r < 0 ? strerrorname_np(errno) : "ok"; }
int main(int argc, char **argv)
{
	int make = argc > 1 && !strcmp(argv[1], "make");
	int cf = make ? IPC_CREAT | 0666 : 0;
	int shm = shmget(KEY, 4096, cf);
	const char *shm_r = res(shm);
	int msg = msgget(KEY, cf);
	const char *msg_r = res(msg);
	int sem = semget(KEY, 1, cf);
	const char *sem_r = res(sem);
	struct mq_attr a = {0, 4, 64, 0};
	mqd_t mq = make ? mq_open("/sbx-test-mq", O_CREAT | O_RDWR, 0666, &a)
	                : mq_open("/sbx-test-mq", O_RDWR);
	const char *mq_r = res(mq == (mqd_t)-1 ? -1 : 0);
	if (make && shm >= 0) {
		char *p = shmat(shm, 0, 0);
		if (p != (void *)-1) strcpy(p, "sbx-secret");
	}
	printf("{\"shm\": \"%s\", \"msg\": \"%s\", \"sem\": \"%s\", \"mq\": \"%s\"}\n",
	       shm_r, msg_r, sem_r, mq_r);
	return 0;
}
"""

# mlock / mlockall: both must fail (RLIMIT_MEMLOCK 0, no CAP_IPC_LOCK).
MLOCK = r"""
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
static const char *res(int r) { return r < 0 ? strerrorname_np(errno) : "ok"; }
int main(void)
{
	size_t n = 1 << 20;
	char *p = malloc(n);
	memset(p, 1, n);
	const char *a = res(mlock(p, n));
	const char *b = res(mlockall(MCL_CURRENT | MCL_FUTURE));
	char *m = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	const char *c = m == MAP_FAILED ? strerrorname_np(errno) : "ok";
	printf("{\"mlock\": \"%s\", \"mlockall\": \"%s\", \"map_locked\": \"%s\"}\n", a, b, c);
	return 0;
}
"""


# i386 getpid through int 0x80: exits 0 where the kernel has the 32-bit ABI, dies of SIGSEGV where
# it has none (CONFIG_IA32_EMULATION off, or ia32_emulation=0 on the kernel command line).
_INT80 = r"""
int main(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	return r > 0 ? 0 : 1;
}
"""


def host_has_i386_abi():
    """Whether int 0x80 reaches the kernel on this host, bare. Where it does not, a program's
    int 0x80 faults (SIGSEGV) before any syscall filter sees it, in or out of a sandbox: the
    filter of the i386 ABI cannot be exercised here. True when it cannot be told (no gcc)."""
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "int80.c"), os.path.join(d, "int80")
        with open(src, "w") as f:
            f.write(_INT80)
        if subprocess.run(["gcc", "-O1", "-w", "-o", exe, src], capture_output=True).returncode:
            return True
        return subprocess.run([exe], capture_output=True).returncode != -11
