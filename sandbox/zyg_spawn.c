/* zyg_spawn.c: the zygote's per-run chain in C (zygote.c, issue 15).
 *
 * Built as a small shared object, embedded in the library (zygote.c: sbx_zyg_spawn_so), handed
 * to the zygote Z as a sealed memfd and loaded by zygote.py with ctypes.PyDLL (the GIL stays held
 * through the call, and Z has no other thread). Plain C against libc only: no Python header.
 *
 * sbx_zyg_spawn(p), called by Z per prepared sandbox with the descriptors the slot sent:
 *  - Z clones I with new mount, pid, ipc and uts namespaces (I is PID 1 of the run's pid
 *    namespace, Z stays outside it), sends the slot 'P', I's pid and pidfd on the run's control
 *    socket (what zygote_prewarm in slot.c waits for) and returns I's pid (> 0), or -1.
 *  - I never returns into Python: it touches its stack and this object's static memory only.
 *    It waits for the slot's 'g' (it is in the run's cgroup then), unshares its cgroup namespace,
 *    mounts /proc, /tmp and /dev/shm, sets the hostname, forks the program P ahead of the job and
 *    reports ready once P is confined. Then the job (struct sbx_job, as child.c receives it): /work
 *    attached, /tmp and /dev/shm resized if asked, P's rlimits set from the job's limits, argv
 *    from the script on, the environment and stdin handed to P; I drops its capabilities, reaps,
 *    reports P's wait status on the status pipe and exits (the kernel kills what is left).
 *  - P takes sbx_child_exec's steps (child.c) in the same order: setsid, stdio, the fixed rlimits,
 *    securebits, the bounding, ambient and permitted capabilities dropped, no_new_privs, both
 *    seccomp filters; dumpable again (as after an exec); then it copies in bulk the pages every
 *    program writes before its job (learned once, "the pages every program writes" below).
 *    It says ready, receives the job's argv, environment and stdin, enters /work and returns 0
 *    into Python with p->argc, p->envc, p->slen and p->strings filled: zygote.py then runs the
 *    program as __main__.
 * Any failure in I or P is reported on the error pipe (struct sbx_child_error) and exits 127: the
 * slot then discards the sandbox and prepares a child.c one. Nothing here allocates. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

/* What zygote.py passes (its ctypes mirror must match: zyg_spawn_abi checks the size). */
struct sbx_zyg {
	int32_t fd[5];	/* the run's ctl, err, status, out and errout descriptors */
	int32_t zpidfd; /* Z's own pidfd: I leaves if Z is already gone */
	char tmp_opts[96];
	char shm_opts[96];
	uint32_t flen[2];	   /* the seccomp programs' lengths in bytes: ioctl, main */
	const void *filter[2];	   /* ...and the programs, loaded in this order */
	uint32_t argc, envc, slen; /* out, in P: the job's argv (from the script), env, bytes */
	uint32_t pad;
	const char *strings; /* out, in P: argc + envc NUL-terminated strings */
};

int sbx_zyg_spawn(struct sbx_zyg *p);
int sbx_zyg_job(struct sbx_zyg *p);
unsigned sbx_zyg_abi(void);

enum { CTL, ERR, STATUS, OUT, ERROUT };

/* The job as I receives it, and the strings as P receives them (each in its own process). */
static struct sbx_job job;
static char strings[SBX_MAX_ARGS_BYTES + 1];
/* The zygote's dispositions of what the init resets, given back to the program. */
static struct sigaction saved_sig[3];
/* P's socket to I and its error pipe, between sbx_zyg_spawn and sbx_zyg_job. */
static int prog_sk = -1, prog_err = -1;

/* ---- the pages every program writes before its job ----
 * A program P is a fork of Z: every page its Python writes before the job (reference counts,
 * the compiler's and the collector's state: ~350 pages for print(1)) is a copy-on-write fault,
 * 20-30 us each on this VM (an exception through the hypervisor per page), and the same pages
 * for every run. One MADV_POPULATE_WRITE per range copies them at ~6-10 us a page. The first
 * programs Z forks (before their job: nothing of a user is in them yet) read which pages they
 * own from /proc/self/pagemap and send the ranges to Z over a datagram socket, then close it;
 * Z keeps the first list it gets and every later program populates those ranges first thing.
 * The list is the same for every run (no run learns anything of another), bounded, and only a
 * hint: a range that is no longer mapped just fails the madvise. */
#define LEARN_MAX 500		    /* ranges: one datagram of 4 + 500 * 8 bytes */
#define LEARN_PAGES 4096	    /* at most 16 MiB copied ahead of a job */
#define LEARN_TRIES 16		    /* forks that may report before Z gives up */
static uint64_t learned[LEARN_MAX]; /* page address | (pages - 1), runs of at most 4096 */
static uint32_t nlearned;
static int learn_r = -1, learn_w = -1, learn_tries;

unsigned sbx_zyg_abi(void)
{
	return (unsigned)sizeof(struct sbx_zyg);
}

static void __attribute__((noreturn)) die(int err_fd, const char *step)
{
	struct sbx_child_error ce;
	size_t n = strlen(step);

	memset(&ce, 0, sizeof ce);
	ce.err = errno;
	if (n >= sizeof ce.step)
		n = sizeof ce.step - 1;
	memcpy(ce.step, step, n);
	if (write(err_fd, &ce, sizeof ce) < 0) {
		/* nothing more to say */
	}
	_exit(127);
}

static int read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	size_t put = 0;

	while (put < len) {
		ssize_t n = write(fd, (const char *)buf + put, len - put);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		put += (size_t)n;
	}
	return 0;
}

/* One message with up to max descriptors (close-on-exec); the count in *nfds. Bytes or -1. */
static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int max, int *nfds)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {buf, len};
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (msg.msg_flags & MSG_CTRUNC)
		return -1;
	return n;
}

static int send_fd(int sock, const void *buf, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {(void *)buf, len};
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t n;

	memset(&msg, 0, sizeof msg);
	memset(cbuf, 0, sizeof cbuf);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof cbuf;
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* Close every descriptor but the n in keep (any order, each >= 0). */
static int close_except(const int *keep, int n)
{
	int sorted[8], i, j;
	unsigned lo = 0;

	for (i = 0; i < n; i++) {
		int v = keep[i];

		for (j = i; j > 0 && sorted[j - 1] > v; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = v;
	}
	for (i = 0; i < n; i++) {
		if ((unsigned)sorted[i] > lo &&
		    syscall(SYS_close_range, lo, (unsigned)sorted[i] - 1, 0) < 0)
			return -1;
		lo = (unsigned)sorted[i] + 1;
	}
	return (int)syscall(SYS_close_range, lo, ~0U, 0);
}

static void set_rlimit(int err_fd, int res, rlim_t v)
{
	struct rlimit rl = {v, v};

	if (setrlimit(res, &rl) < 0)
		die(err_fd, "setrlimit");
}

/* P: copy the learned pages now, in one call per range (errors ignored: only a hint). */
static void learn_populate(void)
{
	uint32_t i;

	for (i = 0; i < nlearned; i++)
		madvise((void *)(uintptr_t)(learned[i] & ~(uint64_t)4095),
			((learned[i] & 4095) + 1) * 4096, 23 /* MADV_POPULATE_WRITE */);
}

/* P, before its job: the ranges of private pages it owns (copied or first touched since the
 * fork), from its maps and pagemap, sent to Z as one datagram. Static buffers only. */
static struct {
	char maps[64 << 10];
	uint64_t pm[512];
	struct {
		uint32_t n;
		uint64_t r[LEARN_MAX];
	} __attribute__((packed)) msg;
} learn_buf; /* the learning program's own buffers: not part of what it reports */
static void learn_report(int fd)
{
	char *learn_maps = learn_buf.maps;
	uint64_t *pm = learn_buf.pm;
	uintptr_t buf_lo = (uintptr_t)&learn_buf & ~(uintptr_t)4095,
		  buf_hi = (uintptr_t)(&learn_buf + 1);
	uint32_t pages = 0;
	size_t len = 0;
	char *l, *end;
	int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int pfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	learn_buf.msg.n = 0;
	if (mfd < 0 || pfd < 0)
		goto out;
	while (len < sizeof learn_buf.maps - 1 &&
	       (n = read(mfd, learn_maps + len, sizeof learn_buf.maps - 1 - len)) > 0)
		len += (size_t)n;
	if (len == sizeof learn_buf.maps - 1)
		goto out; /* more maps than we read: no list rather than part of one */
	learn_maps[len] = '\0';
	for (l = learn_maps; *l; l = end + (*end == '\n')) {
		uint64_t lo = 0, hi = 0, a, run = 0;
		char *q = l;

		for (end = l; *end && *end != '\n'; end++) {
		}
		while (*q && *q != '-' && q < end) {
			char c = *q++;

			lo = lo * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
		}
		if (*q++ != '-')
			continue;
		while (*q && *q != ' ' && q < end) {
			char c = *q++;

			hi = hi * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
		}
		if (end - q < 5 || q[2] != 'w' || q[4] != 'p')
			continue; /* private writable mappings only */
		for (a = lo; a < hi; a += 512 * 4096) {
			uint64_t k, cnt = (hi - a) / 4096;

			if (cnt > 512)
				cnt = 512;
			if (pread(pfd, pm, cnt * 8, (off_t)(a / 4096 * 8)) != (ssize_t)(cnt * 8))
				goto out;
			for (k = 0; k <= cnt; k++) {
				/* present (bit 63), mapped here only (bit 56): ours since the fork
				 */
				uint64_t va = a + k * 4096;
				int own = k < cnt && (pm[k] >> 63 & 1) && (pm[k] >> 56 & 1) &&
					  (va < buf_lo || va >= buf_hi);

				if (own && run < 4096) {
					run++;
					continue;
				}
				if (run) {
					/* past the bounds: the ranges so far (a hint) */
					if (learn_buf.msg.n == LEARN_MAX ||
					    pages + run > LEARN_PAGES)
						goto out;
					pages += (uint32_t)run;
					learn_buf.msg.r[learn_buf.msg.n++] =
					    (a + (k - run) * 4096) | (run - 1);
					run = 0;
				}
				if (own)
					run = 1;
			}
		}
	}
out:
	if (send(fd, &learn_buf.msg, 4 + learn_buf.msg.n * sizeof *learn_buf.msg.r,
		 MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* Z has its list already, or will ask the next program */
	}
	if (mfd >= 0)
		close(mfd);
	if (pfd >= 0)
		close(pfd);
}

/* Z, before each fork: a list a program sent, if any; the socket goes once Z has one. */
static void learn_collect(void)
{
	static struct {
		uint32_t n;
		uint64_t r[LEARN_MAX];
	} __attribute__((packed)) msg;
	ssize_t n;

	if (learn_tries == 0) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
			learn_tries = LEARN_TRIES;
			return;
		}
		learn_r = sv[0];
		learn_w = sv[1];
	}
	if (learn_r < 0)
		return;
	while ((n = recv(learn_r, &msg, sizeof msg, MSG_DONTWAIT)) >= 0) {
		if (n >= 4 && msg.n > 0 && msg.n <= LEARN_MAX &&
		    (size_t)n == 4 + msg.n * sizeof *msg.r) {
			memcpy(learned, msg.r, msg.n * sizeof *msg.r);
			nlearned = msg.n;
			learn_tries = LEARN_TRIES;
			break;
		}
	}
	if (++learn_tries >= LEARN_TRIES) {
		close(learn_r);
		close(learn_w);
		learn_r = learn_w = -1;
	}
}

/* P: confined as sbx_child_exec confines a program, then waits for its job. Returns into Python. */
static int program(struct sbx_zyg *p, int sk)
{
	int err = p->fd[ERR], in, src[3], i;

	/* Off 0-2 first (the init closed them: the socket may sit there), stdio goes there. */
	if ((sk = fcntl(sk, F_DUPFD_CLOEXEC, 3)) < 0 || (err = fcntl(err, F_DUPFD_CLOEXEC, 3)) < 0)
		_exit(127);
	if (setsid() < 0)
		die(err, "setsid");
	in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die(err, "open /dev/null");
	src[0] = in;
	src[1] = p->fd[OUT];
	src[2] = p->fd[ERROUT];
	for (i = 0; i < 3; i++) {
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
		if (src[i] < 0)
			die(err, "dup stdio");
	}
	for (i = 0; i < 3; i++)
		if (dup2(src[i], i) < 0)
			die(err, "dup2 stdio");
	{
		int keep[6] = {0, 1, 2, err, sk, learn_w};

		if (close_except(keep, learn_w >= 0 ? 6 : 5) < 0)
			die(err, "close_range");
	}
	set_rlimit(err, RLIMIT_CORE, 0);
	set_rlimit(err, RLIMIT_MEMLOCK, 0);
	set_rlimit(err, RLIMIT_MSGQUEUE, 0);
	set_rlimit(err, RLIMIT_RTPRIO, 0);
	set_rlimit(err, RLIMIT_RTTIME, 0);
	set_rlimit(err, RLIMIT_NICE, 0);
	set_rlimit(err, RLIMIT_SIGPENDING, SBX_SIGPENDING);
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		      SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		die(err, "securebits");
	{
		struct __user_cap_header_struct ch = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];
		int cap;

		for (cap = 0; cap <= 63; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
				die(err, "drop bounding capability");
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
			die(err, "clear ambient capabilities");
		memset(data, 0, sizeof data);
		if (syscall(SYS_capset, &ch, data) < 0)
			die(err, "capset");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(err, "no_new_privs");
	/* What an exec gives a program whose credentials did not change (Z is not dumpable). */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		die(err, "dumpable");
	for (i = 0; i < 2; i++) {
		struct sock_fprog prog;

		prog.len = (unsigned short)(p->flen[i] / sizeof(struct sock_filter));
		prog.filter = (struct sock_filter *)(uintptr_t)p->filter[i];
		if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
			die(err, "seccomp");
	}
	learn_populate();
	/* Confined: back into Python, which readies itself (its at-fork hooks, its copy-on-write
	 * faults before the job: not the user's) and then calls sbx_zyg_job. */
	prog_sk = sk;
	prog_err = err;
	return 0;
}

/* P, confined, back from Python: says ready, then waits for the job's argv, environment and
 * stdin, and enters /work. 0 with p->argc, envc, slen and strings filled; never fails (exits). */
int sbx_zyg_job(struct sbx_zyg *p)
{
	int sk = prog_sk, err = prog_err, nfds, fd = -1;
	uint32_t hdr[3];
	ssize_t n;

	if (learn_w >= 0) {
		learn_report(learn_w);
		close(learn_w);
		learn_w = -1;
	}
	if (sk < 0 || write_all(sk, "r", 1) < 0)
		_exit(127);
	n = recv_fds(sk, hdr, sizeof hdr, &fd, 1, &nfds);
	if (n != (ssize_t)sizeof hdr || hdr[2] > SBX_MAX_ARGS_BYTES ||
	    (uint64_t)hdr[0] + hdr[1] > 2 * SBX_MAX_ARGS || read_all(sk, strings, hdr[2]) < 0)
		_exit(127);
	strings[hdr[2]] = '\0';
	close(sk);
	prog_sk = -1;
	if (nfds == 1) {
		if (dup2(fd, 0) < 0)
			die(err, "dup2 stdin");
		close(fd);
		if (lseek(0, 0, SEEK_SET) < 0 && errno != ESPIPE) {
			/* as before: a pipe cannot be rewound */
		}
	}
	if (chdir(SBX_WORK_DIR) < 0)
		die(err, "chdir /work");
	close(err);
	p->argc = hdr[0];
	p->envc = hdr[1];
	p->slen = hdr[2];
	p->strings = strings;
	return 0;
}

static int do_mount(const char *src, const char *dst, const char *fs, unsigned long fl,
		    const char *opts)
{
	return mount(src, dst, fs, fl, opts);
}

/* "size=" v in decimal, without snprintf. */
static void size_opt(char *buf, size_t len, uint64_t v)
{
	char digits[24];
	size_t k = 5;
	int i = 0;

	memcpy(buf, "size=", 6);
	do
		digits[i++] = (char)('0' + v % 10);
	while ((v /= 10) && i < 23);
	while (i > 0 && k + 1 < len)
		buf[k++] = digits[--i];
	buf[k] = '\0';
}

/* The job's own rlimits on the waiting program (child.c: job_rlimits); its CPU backstop counts
 * what it used before the job. NULL or what failed. */
static const char *job_rlimits(pid_t pid, const struct sbx_limits *l)
{
	struct rlimit rl;
	struct timespec ts;
	clockid_t clk;

	if (clock_getcpuclockid(pid, &clk) != 0 || clock_gettime(clk, &ts) < 0)
		return "setrlimit: cpu clock";
	rl.rlim_cur = rl.rlim_max = l->file_size_bytes;
	if (prlimit(pid, RLIMIT_FSIZE, &rl, NULL) < 0)
		return "setrlimit: fsize";
	rl.rlim_cur = rl.rlim_max = l->open_files;
	if (prlimit(pid, RLIMIT_NOFILE, &rl, NULL) < 0)
		return "setrlimit: nofile";
	rl.rlim_cur = rl.rlim_max = (rlim_t)l->processes + SBX_NPROC_SLACK;
	if (prlimit(pid, RLIMIT_NPROC, &rl, NULL) < 0)
		return "setrlimit: nproc";
	rl.rlim_cur = 8u << 20;
	rl.rlim_max = l->memory_bytes < rl.rlim_cur ? rl.rlim_cur : l->memory_bytes;
	if (prlimit(pid, RLIMIT_STACK, &rl, NULL) < 0)
		return "setrlimit: stack";
	rl.rlim_cur = rl.rlim_max = l->cpu_ms / 1000 + 2 + (rlim_t)ts.tv_sec;
	if (prlimit(pid, RLIMIT_CPU, &rl, NULL) < 0)
		return "setrlimit: cpu";
	return NULL;
}

/* I: PID 1 of the run. Returns only in P, with its job (0). */
static int init(struct sbx_zyg *p)
{
	int ctl = p->fd[CTL], err = p->fd[ERR], status = p->fd[STATUS];
	int sp[2], jf[4], njf, tree = -1, in = -1, layer = -1, st = 0;
	unsigned argc_skip;
	uint32_t hdr[3], i;
	const char *what;
	size_t off;
	ssize_t n;
	pid_t prog, w;
	char c;

	{
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		if (sigaction(SIGINT, &sa, &saved_sig[0]) < 0 ||
		    sigaction(SIGTERM, &sa, &saved_sig[1]) < 0 ||
		    sigaction(SIGCHLD, &sa, &saved_sig[2]) < 0)
			_exit(127);
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		_exit(127);
	{
		/* Z gone before the death signal was armed: leave (nothing would kill us) */
		struct pollfd pf = {p->zpidfd, POLLIN, 0};

		if (poll(&pf, 1, 0) != 0)
			_exit(127);
	}
	{
		int keep[6] = {ctl, err, status, p->fd[OUT], p->fd[ERROUT], learn_w};

		learn_r = -1; /* closed here: only Z reads the programs' lists */
		if (close_except(keep, learn_w >= 0 ? 6 : 5) < 0)
			die(err, "close_range");
	}
	if (read_all(ctl, &c, 1) < 0 || c != 'g')
		_exit(127);
	if (unshare(CLONE_NEWCGROUP) < 0)
		die(err, "unshare cgroup namespace");
	if (do_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		     "hidepid=invisible,subset=pid") < 0)
		die(err, "mount /proc");
	if (do_mount("sbx-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, p->tmp_opts) < 0)
		die(err, "mount /tmp");
	if (do_mount("sbx-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, p->shm_opts) < 0)
		die(err, "mount /dev/shm");
	if (sethostname("sandbox", 7) < 0)
		die(err, "sethostname");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		die(err, "socketpair");
	prog = fork();
	if (prog < 0)
		die(err, "fork program");
	if (prog == 0) {
		/* Python's own handlers again (its SIGINT raises KeyboardInterrupt) */
		if (sigaction(SIGINT, &saved_sig[0], NULL) < 0 ||
		    sigaction(SIGTERM, &saved_sig[1], NULL) < 0 ||
		    sigaction(SIGCHLD, &saved_sig[2], NULL) < 0)
			die(err, "sigaction");
		close(sp[0]);
		close(ctl);
		close(status);
		return program(p, sp[1]);
	}
	close(sp[1]);
	close(p->fd[OUT]);
	close(p->fd[ERROUT]);
	if (learn_w >= 0)
		close(learn_w);
	if (read_all(sp[0], &c, 1) < 0 || c != 'r')
		_exit(127);
	if (write_all(ctl, "r", 1) < 0)
		_exit(127);
	/* struct sbx_job (internal.h), then its strings */
	n = recv_fds(ctl, &job, sizeof job, jf, 4, &njf);
	if (n == 0)
		_exit(0); /* the slot discarded the sandbox */
	if (n < 0 || (n < (ssize_t)sizeof job &&
		      read_all(ctl, (char *)&job + n, sizeof job - (size_t)n) < 0))
		_exit(127);
	if (job.has_ctl || job.has_layer > 1 || job.has_tree > 1 || job.has_stdin > 1 ||
	    job.has_tree + job.has_stdin + job.has_layer != (uint32_t)njf || job.argc < 1 ||
	    job.argc > SBX_MAX_ARGS || job.envc > SBX_MAX_ARGS ||
	    job.strings_len > SBX_MAX_ARGS_BYTES) {
		errno = EINVAL;
		die(err, "receive job: not a zygote job");
	}
	if (read_all(ctl, strings, job.strings_len) < 0)
		_exit(127);
	strings[job.strings_len] = '\0';
	close(ctl);
	if (job.has_tree)
		tree = jf[0];
	if (job.has_stdin)
		in = jf[job.has_tree];
	if (job.has_layer)
		layer = jf[job.has_tree + job.has_stdin];
	/* The job's package layer (run.c attach_layer: a detached read-only clone), where
	 * child.c's init attaches it: a layer that cannot be attached ends the run, never a run
	 * without the packages it named. */
	if (layer >= 0) {
		if (syscall(SYS_move_mount, layer, "", AT_FDCWD, SBX_LAYER_DIR,
			    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			die(err, "attach layer");
		close(layer);
	}
	if (tree >= 0) {
		if (syscall(SYS_move_mount, tree, "", AT_FDCWD, SBX_WORK_DIR,
			    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			die(err, "attach work directory");
		close(tree);
	} else {
		char opts[96];

		memcpy(opts, "mode=0755,nr_inodes=16384,", 26);
		size_opt(opts + 26, sizeof opts - 26, job.limits.tmp_bytes);
		if (do_mount("sbx-work", SBX_WORK_DIR, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
			die(err, "mount /work");
	}
	if (job.limits.tmp_bytes != SBX_DEFAULT_TMP_BYTES) {
		char opts[40];

		size_opt(opts, sizeof opts, job.limits.tmp_bytes);
		if (do_mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			die(err, "remount /tmp");
		if (do_mount(NULL, "/dev/shm", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			die(err, "remount /dev/shm");
	}
	if ((what = job_rlimits(prog, &job.limits)) != NULL)
		die(err, what);
	/* argv from the script (or -c) on: the interpreter and its options are the zygote's */
	off = 0;
	argc_skip = job.argc;
	{
		const char *s = strings + strlen(strings) + 1;

		off = (size_t)(s - strings);
		for (i = 1; i < job.argc && off <= job.strings_len; i++) {
			if (strcmp(s, "-u") && strcmp(s, "-S") && strcmp(s, "-B")) {
				argc_skip = i;
				break;
			}
			off += strlen(s) + 1;
			s = strings + off;
		}
		if (argc_skip == job.argc)
			off = job.strings_len;
	}
	if (off > job.strings_len) {
		errno = EINVAL;
		die(err, "receive job: strings");
	}
	hdr[0] = job.argc - argc_skip;
	hdr[1] = job.envc;
	hdr[2] = job.strings_len - (uint32_t)off;
	if (send_fd(sp[0], hdr, sizeof hdr, in) < 0 || write_all(sp[0], strings + off, hdr[2]) < 0)
		die(err, "hand the job to the program");
	if (status != 3 && dup2(status, 3) < 0)
		_exit(127);
	syscall(SYS_close_range, 4U, ~0U, 0);
	syscall(SYS_close_range, 0U, 2U, 0);
	{
		struct __user_cap_header_struct ch = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];

		memset(data, 0, sizeof data);
		syscall(SYS_capset, &ch, data);
	}
	for (;;) {
		w = waitpid(-1, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			_exit(126);
		if (w == prog)
			break;
	}
	if (write(3, &st, sizeof st) < 0)
		_exit(125);
	_exit(0);
}

int sbx_zyg_spawn(struct sbx_zyg *p)
{
	struct clone_args args;
	char msg[1 + sizeof(int)];
	int pidfd = -1, zret;
	pid_t pid;

	if (learn_tries < LEARN_TRIES)
		learn_collect();
	memset(&args, 0, sizeof args);
	args.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
	if (pid < 0)
		return -1;
	if (pid == 0)
		return init(p); /* only P comes back, with its job: 0 */
	msg[0] = 'P';
	memcpy(msg + 1, &pid, sizeof(int));
	zret = send_fd(p->fd[CTL], msg, sizeof msg, pidfd);
	close(pidfd);
	if (zret < 0) {
		kill(pid, SIGKILL);
		return -1;
	}
	return pid;
}
