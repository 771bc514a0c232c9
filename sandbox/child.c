/* child.c: what runs between clone3 and execve, inside the new namespaces.
 *
 * The slot's template (sbx_template_main, run once per slot and then now and again) assembles a
 * minimal root (tmpfs + read-only binds) in a mount namespace of its own and pivots into it. The
 * clone3 child of each run is born in a copy of that namespace and becomes PID 1 of a new pid
 * namespace ("init"); ahead of time, while the slot is idle, it mounts its own /proc, /tmp and
 * /dev/shm; then it waits for a job on its control socket: the work directory (a detached idmapped
 * mount), stdin, argv, env and limits. It attaches /work, forks the program, and then only reaps:
 * when the program's main process exits, init reports its wait status and exits, and the kernel
 * kills everything else left in the namespace. Only async-signal-safe calls here: no malloc, no
 * stdio; every failure is reported as a fixed struct over a close-on-exec pipe, then _exit. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

static void __attribute__((noreturn))
die(const struct sbx_child_args *a, const char *step, const char *detail)
{
	struct sbx_child_error e;
	size_t n;

	memset(&e, 0, sizeof e);
	e.err = errno;
	copy_str(e.step, sizeof e.step, step);
	if (detail) {
		n = strlen(e.step);
		copy_str(e.step + n, sizeof e.step - n, " ");
		copy_str(e.step + n + 1, sizeof e.step - n - 1, detail);
	}
	if (write(a->err_fd, &e, sizeof e) < 0) {
		/* nothing left to report to */
	}
	_exit(127);
}

/* Join "STAGE" and an absolute inside path into buf. */
static const char *stage(char *buf, size_t len, const char *inside)
{
	size_t n = strlen(SBX_STAGE);

	copy_str(buf, len, SBX_STAGE);
	copy_str(buf + n, len - n, inside);
	return buf;
}

static int setattr(const char *path, unsigned flags, uint64_t set)
{
	struct mount_attr attr;

	memset(&attr, 0, sizeof attr);
	attr.attr_set = set;
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof attr);
}

/* Bind host path src at inside path dst, read-only, nosuid, nodev, recursively. Missing optional
 * sources are skipped: the language set differs between hosts. */
static void bind_ro(const struct sbx_child_args *a, const char *src, const char *dst, bool optional)
{
	char target[512];
	struct stat st;

	if (stat(src, &st) < 0) {
		if (optional)
			return;
		die(a, "stat bind source", src);
	}
	stage(target, sizeof target, dst);
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(target, 0755) < 0 && errno != EEXIST)
			die(a, "mkdir", dst);
	} else {
		int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);

		if (fd < 0)
			die(a, "create", dst);
		close(fd);
	}
	if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		die(a, "bind", src);
	if (setattr(target, AT_RECURSIVE,
		    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
		die(a, "read-only", dst);
}

/* ---- extra read-only trees, copied rather than bound ----
 * A bind mount shows its source's path in /proc/self/mountinfo (the mount's root, as a path
 * within the source file system: open_tree and move_mount do not change that), so a bound
 * directory would tell every run where the service lives on the host (e.g. /opt/sbx/fcgi/runner
 * or a checkout under /work). The extra trees are small (the runner's scripts), so the template
 * holds a copy on a tmpfs of its own instead: mountinfo then shows "/" and "tmpfs". Regular
 * files, directories and symlinks are copied, nothing else; set-id bits never. Bounded, and
 * fail-closed past the bounds (a tree that large should be part of the image, not a bind). */
#define COPY_MAX_BYTES (64ull << 20)
#define COPY_MAX_ENTRIES 4096
#define COPY_MAX_DEPTH 16

struct copy_budget {
	uint64_t bytes;
	unsigned entries;
};

static void copy_file(const struct sbx_child_args *a, int src, int dst, const char *name,
		      mode_t mode, struct copy_budget *b)
{
	int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int out =
	    openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	ssize_t n;

	if (in < 0 || out < 0)
		die(a, "copy tree: open", name);
	while ((n = sendfile(out, in, NULL, 1 << 20)) > 0) {
		b->bytes += (uint64_t)n;
		if (b->bytes > COPY_MAX_BYTES) {
			errno = EFBIG;
			die(a, "copy tree: larger than 64 MiB at", name);
		}
	}
	if (n < 0)
		die(a, "copy tree: copy", name);
	close(in);
	close(out);
}

static void copy_tree(const struct sbx_child_args *a, int src, int dst, int depth,
		      struct copy_budget *b)
{
	char buf[4096];
	long n;

	if (depth > COPY_MAX_DEPTH) {
		errno = ELOOP;
		die(a, "copy tree", "deeper than 16 levels");
	}
	while ((n = syscall(SYS_getdents64, src, buf, sizeof buf)) > 0) {
		long off;

		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			const char *name = d->d_name;
			struct stat st;

			off += d->d_reclen;
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			if (++b->entries > COPY_MAX_ENTRIES) {
				errno = EFBIG;
				die(a, "copy tree", "more than 4096 entries");
			}
			if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				die(a, "copy tree: stat", name);
			if (S_ISDIR(st.st_mode)) {
				int s2, d2;

				if (mkdirat(dst, name, st.st_mode & 0777) < 0)
					die(a, "copy tree: mkdir", name);
				s2 = openat(src, name,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				d2 = openat(dst, name,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (s2 < 0 || d2 < 0)
					die(a, "copy tree: open directory", name);
				copy_tree(a, s2, d2, depth + 1, b);
				close(s2);
				close(d2);
			} else if (S_ISREG(st.st_mode)) {
				copy_file(a, src, dst, name, st.st_mode, b);
			} else if (S_ISLNK(st.st_mode)) {
				char target[4096];
				ssize_t len = readlinkat(src, name, target, sizeof target - 1);

				if (len < 0)
					die(a, "copy tree: readlink", name);
				target[len] = '\0';
				if (symlinkat(target, dst, name) < 0)
					die(a, "copy tree: symlink", name);
			}
			/* sockets, FIFOs, devices: nothing a program needs from a read-only tree */
		}
	}
	if (n < 0)
		die(a, "copy tree: read directory", NULL);
}

/* Copy host directory src to inside path dst on a tmpfs of its own, then make it read-only. */
static void copy_ro(const struct sbx_child_args *a, const char *src, const char *dst)
{
	struct copy_budget b = {0, 0};
	char target[512];
	int s, d;

	stage(target, sizeof target, dst);
	s = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s < 0)
		die(a, "open bind source", src);
	if (mkdir(target, 0755) < 0 && errno != EEXIST)
		die(a, "mkdir", dst);
	if (mount("sbx-ro", target, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=64m,nr_inodes=8192,mode=0755") < 0)
		die(a, "mount tmpfs at", dst);
	d = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		die(a, "open", dst);
	copy_tree(a, s, d, 0, &b);
	close(s);
	close(d);
	if (setattr(target, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
		die(a, "read-only", dst);
}

static void mkdir_in(const struct sbx_child_args *a, const char *inside, mode_t mode)
{
	char p[512];

	if (mkdir(stage(p, sizeof p, inside), mode) < 0 && errno != EEXIST)
		die(a, "mkdir", inside);
}

static void write_in(const struct sbx_child_args *a, const char *inside, const char *data)
{
	char p[512];
	int fd = open(stage(p, sizeof p, inside), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t len = strlen(data);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		die(a, "write", inside);
	close(fd);
}

static void symlink_in(const struct sbx_child_args *a, const char *to, const char *inside)
{
	char p[512];

	if (symlink(to, stage(p, sizeof p, inside)) < 0)
		die(a, "symlink", inside);
}

/* /bin, /lib... are symlinks into /usr on merged-/usr hosts; elsewhere they are directories. */
static void top_dir(const struct sbx_child_args *a, const char *name, const char *link_to)
{
	char target[64];
	ssize_t n = readlink(name, target, sizeof target - 1);

	if (n > 0) {
		target[n] = '\0';
		symlink_in(a, target, name);
		return;
	}
	(void)link_to;
	bind_ro(a, name, name, true);
}

static void setup_dev(const struct sbx_child_args *a)
{
	static const char *const nodes[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
					    "/dev/urandom"};
	char p[512];
	size_t i;

	if (mount("sbx-dev", stage(p, sizeof p, "/dev"), "tmpfs", MS_NOSUID | MS_NOEXEC,
		  "size=64k,nr_inodes=64,mode=0755") < 0)
		die(a, "mount", "/dev");
	for (i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
		int fd = open(stage(p, sizeof p, nodes[i]), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

		if (fd < 0)
			die(a, "create", nodes[i]);
		close(fd);
		if (mount(nodes[i], p, NULL, MS_BIND, NULL) < 0)
			die(a, "bind", nodes[i]);
		if (setattr(p, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC) < 0)
			die(a, "attributes", nodes[i]);
	}
	symlink_in(a, "/proc/self/fd", "/dev/fd");
	symlink_in(a, "/proc/self/fd/0", "/dev/stdin");
	symlink_in(a, "/proc/self/fd/1", "/dev/stdout");
	symlink_in(a, "/proc/self/fd/2", "/dev/stderr");
	mkdir_in(a, "/dev/shm", 0755); /* each run mounts its own (setup_run) */
	mkdir_in(a, "/dev/pts", 0755);
	if (setattr(stage(p, sizeof p, "/dev"), 0, MOUNT_ATTR_RDONLY) < 0)
		die(a, "read-only", "/dev");
}

static void close_others(const struct sbx_child_args *a);

/* ---- the read-only layer (sbx_request.layer_fd) ----
 * The template holds an empty SBX_LAYER_DIR (its parent made too: the root is read-only once
 * built); a job with a layer gets it moved there by its init, as /work is. */
static void layer_mountpoint(const struct sbx_child_args *a)
{
	char parent[sizeof SBX_LAYER_DIR];
	char *slash;

	copy_str(parent, sizeof parent, SBX_LAYER_DIR);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		mkdir_in(a, parent, 0755);
	}
	mkdir_in(a, SBX_LAYER_DIR, 0755);
}

/* The job's layer (a detached read-only mount made by the slot, run.c attach_layer), or
 * nothing. A layer that cannot be attached ends the run: never without the packages it named. */
static void attach_layer(const struct sbx_child_args *a, int layer)
{
	if (layer < 0)
		return;
	if (syscall(SYS_move_mount, layer, "", AT_FDCWD, SBX_LAYER_DIR, MOVE_MOUNT_F_EMPTY_PATH) <
	    0)
		die(a, "attach", "layer");
	close(layer);
}

/* The slot's template root: what every run's root shares, read-only. Built by a helper as root
 * in a mount namespace of its own (sbx_template_main); each run's mount namespace is a copy of it
 * (clone3 from inside it), so a run pays for a copy of ~25 mounts instead of building them, and
 * the copies are locked (copied into a less privileged user namespace): a run's init cannot
 * unmount or make writable anything of it. What a run may write is mounted fresh per run
 * (setup_run). */
static void build_template(const struct sbx_child_args *a)
{
	size_t i;

	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die(a, "make mounts private", NULL);
	if (mount("sbx-root", SBX_STAGE, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=256k,nr_inodes=256,mode=0755") < 0)
		die(a, "mount", "root tmpfs");
	bind_ro(a, "/usr", "/usr", false);
	top_dir(a, "/bin", "usr/bin");
	top_dir(a, "/sbin", "usr/sbin");
	top_dir(a, "/lib", "usr/lib");
	top_dir(a, "/lib64", "usr/lib64");
	top_dir(a, "/lib32", "usr/lib32");
	top_dir(a, "/libx32", "usr/libx32");

	/* /etc: generated identity files plus the few host files the runtimes read. Never the whole
	 * host /etc: it holds the service's configuration. */
	mkdir_in(a, "/etc", 0755);
	write_in(a, "/etc/passwd",
		 "root:x:0:0:root:/:/usr/sbin/nologin\n"
		 "user:x:1000:1000:user:/work:/bin/sh\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	write_in(a, "/etc/group", "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n");
	write_in(a, "/etc/hostname", "sandbox\n");
	write_in(a, "/etc/hosts", "127.0.0.1 localhost sandbox\n::1 localhost\n");
	write_in(a, "/etc/resolv.conf", "");
	write_in(a, "/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n");
	{
		static const char *const etc[] = {
		    "/etc/ld.so.cache",	 "/etc/ld.so.conf",	"/etc/ld.so.conf.d",
		    "/etc/alternatives", "/etc/localtime",	"/etc/timezone",
		    "/etc/python3",	 "/etc/python3.11",	"/etc/ssl",
		    "/etc/mime.types",	 "/etc/bash.bashrc",	"/etc/profile",
		    "/etc/inputrc",	 "/etc/debian_version", "/etc/os-release",
		    "/etc/gai.conf",	 "/etc/matplotlibrc", /* matplotlib refuses to import
								 without it */
		};
		for (i = 0; i < sizeof etc / sizeof etc[0]; i++)
			bind_ro(a, etc[i], etc[i], true);
	}

	mkdir_in(a, "/proc", 0555); /* mount points of what each run mounts fresh (setup_run) */
	mkdir_in(a, "/tmp", 01777);
	mkdir_in(a, SBX_WORK_DIR, 0755);
	layer_mountpoint(a);

	mkdir_in(a, "/dev", 0755);
	setup_dev(a);

	for (i = 0; i < a->nbinds; i++) {
		/* parents of extra binds, one level deep (e.g. /opt for /opt/sbx) */
		char parent[256];
		char *slash;

		copy_str(parent, sizeof parent, a->binds[i].inside);
		slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			mkdir_in(a, parent, 0755);
		}
		{
			struct stat st;

			/* Directories are copied (copy_ro: no host path in mountinfo); a single
			 * file is bound and shows its host path there. */
			if (stat(a->binds[i].host, &st) == 0 && S_ISDIR(st.st_mode))
				copy_ro(a, a->binds[i].host, a->binds[i].inside);
			else
				bind_ro(a, a->binds[i].host, a->binds[i].inside, false);
		}
	}

	if (chdir(SBX_STAGE) < 0)
		die(a, "chdir", "new root");
	/* pivot_root(".", ".") stacks the old root under the new one; detaching it leaves nothing
	 * of the host's tree reachable. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		die(a, "pivot_root", NULL);
	if (umount2(".", MNT_DETACH) < 0)
		die(a, "detach", "old root");
	if (chdir("/") < 0)
		die(a, "chdir", "/");
	/* Private here too, so a copy (a run's namespace) never shares mount events with it. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die(a, "make mounts private", "template");
	if (setattr("/", 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
		die(a, "read-only", "/");
}

/* What a run may write, and its own /proc: mounted fresh by each run's init over the template's
 * empty directories, so nothing of one run is ever seen by the next. */
static void setup_run(const struct sbx_child_args *a)
{
	/* A fresh /proc showing only our processes: no /proc/sys, no sysrq-trigger, no kcore. */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "hidepid=invisible,subset=pid") < 0)
		die(a, "mount", "/proc");
	if (mount("sbx-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, a->tmp_opts) < 0)
		die(a, "mount", "/tmp");
	if (mount("sbx-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, a->shm_opts) < 0)
		die(a, "mount", "/dev/shm");
}

void sbx_template_main(const struct sbx_child_args *a)
{
	char c;

	pid_t pid;
	int st;

	close_others(a);
	if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
		die(a, "unshare", "mount and pid namespaces");
	build_template(a);
	/* The kernel lets a user namespace mount a proc only where one is already fully visible in
	 * its mount namespace (mount_too_revealing): the template holds a proc of a pid namespace
	 * that is empty once our first child has gone. It shows nothing, and each run mounts its
	 * own over it. */
	pid = fork();
	if (pid < 0)
		die(a, "fork", "template proc");
	if (pid == 0)
		_exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			    "hidepid=invisible,subset=pid") < 0
			  ? errno
			  : 0);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
		die(a, "mount", "template /proc");
	}
	if (write(a->ctl_fd, "r", 1) != 1)
		die(a, "report ready", "template");
	/* The slot opens our mount namespace, then closes its end: we are no longer needed. */
	while (read(a->ctl_fd, &c, 1) > 0) {
	}
	_exit(0);
}

/* Untrusted work runs at SBX_NICE or nicer: never less nice than the broker was started (an
 * operator who starts the service under `nice -n 15` would otherwise see every run fail: lowering
 * the nice value needs a privilege the sandbox does not have). */
static void yield_cpu(const struct sbx_child_args *a)
{
	int cur;

	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	if (errno != 0)
		die(a, "getpriority", NULL);
	if (cur < SBX_NICE && setpriority(PRIO_PROCESS, 0, SBX_NICE) < 0)
		die(a, "setpriority", NULL);
}

static void drop_caps(const struct sbx_child_args *a)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			die(a, "drop bounding capability", NULL);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		die(a, "clear ambient capabilities", NULL);
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		die(a, "capset", NULL);
}

static void set_rlimit(const struct sbx_child_args *a, int res, rlim_t v, const char *name)
{
	struct rlimit rl = {v, v};

	if (setrlimit(res, &rl) < 0)
		die(a, "setrlimit", name);
}

/* The rlimits that depend on the job, set on process pid (0: ourselves). NULL, or the name of
 * the one that failed (errno set). */
static const char *job_rlimits(pid_t pid, const struct sbx_limits *l, bool cpu)
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
static void __attribute__((noreturn))
exec_program(const struct sbx_child_args *a, const struct sbx_limits *l, int in, int ctl,
	     char *const *argv, char *const *envp)
{
	if (setsid() < 0)
		die(a, "setsid", NULL);
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
			die(a, "open", "/dev/null");
	} else if (lseek(in, 0, SEEK_SET) < 0 && errno != ESPIPE) {
		die(a, "rewind stdin", NULL);
	}
	/* The sources may themselves sit on 0-3 (the init closed them), with close-on-exec set:
	 * lift them all above the last target first, then dup2 gives fresh descriptors that
	 * survive exec. A context's kernel also gets its control socket as fd 3. */
	{
		int src[4] = {in, a->out_fd, a->err_out_fd, ctl}, i, n = ctl >= 0 ? 4 : 3;

		for (i = 0; i < n; i++) {
			src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, n);
			if (src[i] < 0)
				die(a, "dup", "stdio");
		}
		for (i = 0; i < n; i++)
			if (dup2(src[i], i) < 0)
				die(a, "dup2", "stdio");
		/* Everything above closes at exec, the error pipe included. */
		if (syscall(SYS_close_range, (unsigned)n, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
			die(a, "close_range", NULL);
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
		const char *what = job_rlimits(0, l, ctl < 0);

		if (what)
			die(a, "setrlimit", what);
	}

	if (chdir(SBX_WORK_DIR) < 0)
		die(a, "chdir", SBX_WORK_DIR);

	/* Lock the uid-0 special cases so no later exec can regain capabilities. */
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		      SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		die(a, "securebits", NULL);
	drop_caps(a);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(a, "no_new_privs", NULL);
	/* Last: from here on only the allowlist applies, so nothing after it may need more. */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, a->ioctl_filter, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, a->filter, 0, 0) < 0)
		die(a, "seccomp", NULL);
	execve(argv[0], argv, envp);
	die(a, "execve", argv[0]);
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
		die(a, "receive job", NULL);
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
		die(a, "receive job", "bad header");
	}
	*tree = job.has_tree ? fds[k++] : -1;
	*in = job.has_stdin ? fds[k++] : -1;
	*ctl = job.has_ctl ? fds[k++] : -1;
	*layer = job.has_layer ? fds[k++] : -1;
	for (got = 0; got < job.strings_len; got += (size_t)n) {
		n = read(a->ctl_fd, job_strings + got, job.strings_len - got);
		if (n <= 0)
			die(a, "receive job", "strings");
	}
	job_strings[job.strings_len] = '\0';
	for (i = 0, off = 0; i < job.argc + job.envc; i++) {
		if (off >= job.strings_len) {
			errno = EINVAL;
			die(a, "receive job", "string count");
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

/* warm.c: fork the program's process ahead of the job, through every step a program gets, as
 * a Python interpreter that prepares itself and then waits on fd 3 (its end of *sock). Returns
 * its pid once it has reported ready, or -1 (no pre-started process: the job starts cold). */
static pid_t warm_prestart(const struct sbx_child_args *a, int *sock)
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
		exec_program(&pa, NULL, -1, sv[1], (char *const *)argv,
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
static int warm_handover(const struct sbx_child_args *a, pid_t pid, int sock, int in)
{
	static uint32_t hdr[5];
	unsigned opts;
	size_t off;
	pid_t holder = -1;
	int idx = sbx_warm_parse(job_argv, job_envp, &opts);
	bool node = opts & SBX_WARM_OPT_NODE;

	if (idx < 1 || opts != a->warm_opts || job_rlimits(pid, &job.limits, true) != NULL)
		return -1;
	off = (size_t)(job_argv[idx] - job_strings);
	hdr[0] = job.argc - (uint32_t)idx;
	hdr[1] = job.envc;
	hdr[2] = job.strings_len - (uint32_t)off;
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
	    sbx_write_all(sock, job_strings + off, hdr[2]) < 0) {
		if (holder > 0)
			reap(holder);
		return -1;
	}
	return holder > 0 ? node_stdin(sock, holder) : 0;
}

/* prefix followed by v in decimal, without snprintf (not async-signal-safe). */
static void opts_u64(char *buf, size_t len, const char *prefix, uint64_t v)
{
	char digits[24];
	size_t k;
	int i = 0;

	copy_str(buf, len, prefix);
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
			die(a, "attach", "work directory");
		close(tree);
		return;
	}
	opts_u64(opts, sizeof opts, "mode=0755,nr_inodes=16384,size=", job.limits.tmp_bytes);
	if (mount("sbx-work", SBX_WORK_DIR, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		die(a, "mount", "work tmpfs");
}

/* Keep only our own pipes: the slot's listening socket, its log and its cgroup directories must
 * not sit in a process that lives inside the sandbox. */
static void close_others(const struct sbx_child_args *a)
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

void sbx_child_main(const struct sbx_child_args *a)
{
	char go;
	pid_t pid, warm_pid = -1;
	int status = 0, tree = -1, in = -1, ctl = -1, warm_sock = -1, layer = -1;

	close_others(a);
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
		die(a, "keepcaps", NULL);
	if (setresgid(SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0 ||
	    setresuid(SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0)
		die(a, "switch to inside uid", NULL);
	{
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];

		if (syscall(SYS_capget, &hdr, data) < 0)
			die(a, "capget", NULL);
		data[0].effective = data[0].permitted;
		data[1].effective = data[1].permitted;
		if (syscall(SYS_capset, &hdr, data) < 0)
			die(a, "raise effective capabilities", NULL);
	}
	/* Only now: changing ids or gaining capabilities clears the parent-death signal. Should the
	 * slot die before this line, the job read below sees EOF and we leave. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die(a, "pdeathsig", NULL);
	setup_run(a);
	if (sethostname("sandbox", 7) < 0)
		die(a, "sethostname", NULL);
	/* No one inside may read init's memory or environment. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		die(a, "dumpable", NULL);

	/* Untrusted work yields the CPU to the service itself (nginx, workers, health checks) when
	 * the machine is saturated; on an idle machine nice changes nothing. */
	if (a->warm) {
		yield_cpu(a);
		warm_pid = warm_prestart(a, &warm_sock);
	}

	/* Ready: the slot may now hand us a job at any time. */
	if (write(a->ctl_fd, "r", 1) != 1)
		die(a, "report ready", NULL);
	recv_job(a, &tree, &in, &ctl, &layer);
	attach_work(a, tree);
	attach_layer(a, layer);
	if (job.limits.tmp_bytes != a->tmp_bytes) {
		char opts[96];

		/* A job that asks for another /tmp size gets it by remount, so the prepared sandbox
		 * stays usable whatever the request. */
		opts_u64(opts, sizeof opts, "size=", job.limits.tmp_bytes);
		if (mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			die(a, "remount", "/tmp");
		if (mount(NULL, "/dev/shm", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
			die(a, "remount", "/dev/shm");
	}

	if (warm_pid > 0) {
		/* The pre-started interpreter becomes the program if the job is its kind of run
		 * (never a context's kernel); else it goes, and the program starts cold. */
		if (ctl < 0 && warm_handover(a, warm_pid, warm_sock, in) == 0) {
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
		yield_cpu(a);
		pid = fork();
		if (pid < 0)
			die(a, "fork", "program");
		if (pid == 0)
			exec_program(a, &job.limits, in, ctl, job_argv, job_envp);
		main_pid = pid;
	}
	if (ctl >= 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = forward_sigint;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGINT, &sa, NULL) < 0)
			die(a, "sigaction", "SIGINT");
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

/* zygote.c: the child of the zygote's clone3 (new user and mount namespaces, in the slot's
 * network namespace) becomes the slot's warm interpreter. As the inside uid, with the
 * namespace's capabilities kept as ambient ones (they survive the exec: the zygote's forks mount
 * each run's /proc, /tmp and /dev/shm and drop them before any user code), non-dumpable, niced,
 * with /dev/null as stdio and its control socket as fd 3. Failures go to the error pipe. */
void sbx_zygote_main(const struct sbx_child_args *args)
{
	static const char *argv[8];
	struct sbx_child_args za = *args;
	const struct sbx_child_args *a = &za;
	char go;
	int cap, fd;

	close_others(args);
	/* Off the numbers the exec's stdio and control socket take (0-3). */
	za.err_fd = fcntl(args->err_fd, F_DUPFD_CLOEXEC, 10);
	za.ctl_fd = fcntl(args->ctl_fd, F_DUPFD_CLOEXEC, 10);
	za.status_fd = args->status_fd >= 0 ? fcntl(args->status_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (za.err_fd < 0 || za.ctl_fd < 0)
		_exit(127);
	close(args->err_fd);
	close(args->ctl_fd);
	{
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	if (read(a->sync_fd, &go, 1) != 1)
		_exit(127);
	close(a->sync_fd);
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		die(a, "keepcaps", NULL);
	if (setresgid(SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0 ||
	    setresuid(SBX_INSIDE_UID, SBX_INSIDE_UID, SBX_INSIDE_UID) < 0)
		die(a, "switch to inside uid", NULL);
	{
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];

		if (syscall(SYS_capget, &hdr, data) < 0)
			die(a, "capget", NULL);
		data[0].effective = data[0].inheritable = data[0].permitted;
		data[1].effective = data[1].inheritable = data[1].permitted;
		if (syscall(SYS_capset, &hdr, data) < 0)
			die(a, "raise capabilities", NULL);
	}
	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0 && errno != EINVAL)
			die(a, "ambient capability", NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die(a, "pdeathsig", NULL);
	yield_cpu(a);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		die(a, "dumpable", NULL);
	if (chdir("/") < 0)
		die(a, "chdir", "/");
	if (dup2(a->ctl_fd, 3) < 0)
		die(a, "dup", "control socket");
	fd = open("/dev/null", O_RDWR); /* may be 0 itself: then it must survive the exec */
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
	    dup2(a->status_fd >= 0 ? a->status_fd : fd, 2) < 0)
		die(a, "open", "/dev/null");
	if (fd > 3)
		close(fd);
	if (syscall(SYS_close_range, 4U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		die(a, "close_range", NULL);
	sbx_zygote_argv(a->warm_opts, a->warm_hint, argv);
	execve(argv[0], (char *const *)argv, (char *const *)sbx_warm_env);
	die(a, "execve", argv[0]);
}
