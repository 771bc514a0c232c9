/* child_template.c: the slot's template root, built between fork and exit by a helper (root).
 *
 * sbx_template_main (run once per slot and then now and again, slot.c) assembles a minimal root
 * (tmpfs + read-only binds, small trees copied) in a mount namespace of its own and pivots into
 * it; each run's clone3 child (child.c) is born in a copy of that namespace. Same rules as
 * child.c: only async-signal-safe calls, every failure reported over the error pipe (then
 * _exit). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* Join "STAGE" and an absolute inside path into buf. */
static const char *stage(char *buf, size_t len, const char *inside)
{
	size_t n = strlen(SBX_STAGE);

	sbx_child_copy_str(buf, len, SBX_STAGE);
	sbx_child_copy_str(buf + n, len - n, inside);
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
		sbx_child_die(a, "stat bind source", src);
	}
	stage(target, sizeof target, dst);
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(target, 0755) < 0 && errno != EEXIST)
			sbx_child_die(a, "mkdir", dst);
	} else {
		int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);

		if (fd < 0)
			sbx_child_die(a, "create", dst);
		close(fd);
	}
	if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		sbx_child_die(a, "bind", src);
	if (setattr(target, AT_RECURSIVE,
		    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
		sbx_child_die(a, "read-only", dst);
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
		sbx_child_die(a, "copy tree: open", name);
	while ((n = sendfile(out, in, NULL, 1 << 20)) > 0) {
		b->bytes += (uint64_t)n;
		if (b->bytes > COPY_MAX_BYTES) {
			errno = EFBIG;
			sbx_child_die(a, "copy tree: larger than 64 MiB at", name);
		}
	}
	if (n < 0)
		sbx_child_die(a, "copy tree: copy", name);
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
		sbx_child_die(a, "copy tree", "deeper than 16 levels");
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
				sbx_child_die(a, "copy tree", "more than 4096 entries");
			}
			if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				sbx_child_die(a, "copy tree: stat", name);
			if (S_ISDIR(st.st_mode)) {
				int s2, d2;

				if (mkdirat(dst, name, st.st_mode & 0777) < 0)
					sbx_child_die(a, "copy tree: mkdir", name);
				s2 = openat(src, name,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				d2 = openat(dst, name,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (s2 < 0 || d2 < 0)
					sbx_child_die(a, "copy tree: open directory", name);
				copy_tree(a, s2, d2, depth + 1, b);
				close(s2);
				close(d2);
			} else if (S_ISREG(st.st_mode)) {
				copy_file(a, src, dst, name, st.st_mode, b);
			} else if (S_ISLNK(st.st_mode)) {
				char target[4096];
				ssize_t len = readlinkat(src, name, target, sizeof target - 1);

				if (len < 0)
					sbx_child_die(a, "copy tree: readlink", name);
				target[len] = '\0';
				if (symlinkat(target, dst, name) < 0)
					sbx_child_die(a, "copy tree: symlink", name);
			}
			/* sockets, FIFOs, devices: nothing a program needs from a read-only tree */
		}
	}
	if (n < 0)
		sbx_child_die(a, "copy tree: read directory", NULL);
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
		sbx_child_die(a, "open bind source", src);
	if (mkdir(target, 0755) < 0 && errno != EEXIST)
		sbx_child_die(a, "mkdir", dst);
	if (mount("sbx-ro", target, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=64m,nr_inodes=8192,mode=0755") < 0)
		sbx_child_die(a, "mount tmpfs at", dst);
	d = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		sbx_child_die(a, "open", dst);
	copy_tree(a, s, d, 0, &b);
	close(s);
	close(d);
	if (setattr(target, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
		sbx_child_die(a, "read-only", dst);
}

static void mkdir_in(const struct sbx_child_args *a, const char *inside, mode_t mode)
{
	char p[512];

	if (mkdir(stage(p, sizeof p, inside), mode) < 0 && errno != EEXIST)
		sbx_child_die(a, "mkdir", inside);
}

static void write_in(const struct sbx_child_args *a, const char *inside, const char *data)
{
	char p[512];
	int fd = open(stage(p, sizeof p, inside), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t len = strlen(data);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		sbx_child_die(a, "write", inside);
	close(fd);
}

static void symlink_in(const struct sbx_child_args *a, const char *to, const char *inside)
{
	char p[512];

	if (symlink(to, stage(p, sizeof p, inside)) < 0)
		sbx_child_die(a, "symlink", inside);
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
		sbx_child_die(a, "mount", "/dev");
	for (i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
		int fd = open(stage(p, sizeof p, nodes[i]), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

		if (fd < 0)
			sbx_child_die(a, "create", nodes[i]);
		close(fd);
		if (mount(nodes[i], p, NULL, MS_BIND, NULL) < 0)
			sbx_child_die(a, "bind", nodes[i]);
		if (setattr(p, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC) < 0)
			sbx_child_die(a, "attributes", nodes[i]);
	}
	symlink_in(a, "/proc/self/fd", "/dev/fd");
	symlink_in(a, "/proc/self/fd/0", "/dev/stdin");
	symlink_in(a, "/proc/self/fd/1", "/dev/stdout");
	symlink_in(a, "/proc/self/fd/2", "/dev/stderr");
	mkdir_in(a, "/dev/shm", 0755); /* each run mounts its own (setup_run) */
	mkdir_in(a, "/dev/pts", 0755);
	if (setattr(stage(p, sizeof p, "/dev"), 0, MOUNT_ATTR_RDONLY) < 0)
		sbx_child_die(a, "read-only", "/dev");
}

/* ---- the read-only layer (sbx_request.layer_fd) ----
 * The template holds an empty SBX_LAYER_DIR (its parent made too: the root is read-only once
 * built); a job with a layer gets it moved there by its init, as /work is. */
static void layer_mountpoint(const struct sbx_child_args *a)
{
	char parent[sizeof SBX_LAYER_DIR];
	char *slash;

	sbx_child_copy_str(parent, sizeof parent, SBX_LAYER_DIR);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		mkdir_in(a, parent, 0755);
	}
	mkdir_in(a, SBX_LAYER_DIR, 0755);
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
		sbx_child_die(a, "make mounts private", NULL);
	if (mount("sbx-root", SBX_STAGE, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=256k,nr_inodes=256,mode=0755") < 0)
		sbx_child_die(a, "mount", "root tmpfs");
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

		sbx_child_copy_str(parent, sizeof parent, a->binds[i].inside);
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
		sbx_child_die(a, "chdir", "new root");
	/* pivot_root(".", ".") stacks the old root under the new one; detaching it leaves nothing
	 * of the host's tree reachable. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		sbx_child_die(a, "pivot_root", NULL);
	if (umount2(".", MNT_DETACH) < 0)
		sbx_child_die(a, "detach", "old root");
	if (chdir("/") < 0)
		sbx_child_die(a, "chdir", "/");
	/* Private here too, so a copy (a run's namespace) never shares mount events with it. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		sbx_child_die(a, "make mounts private", "template");
	if (setattr("/", 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
		sbx_child_die(a, "read-only", "/");
}

void sbx_template_main(const struct sbx_child_args *a)
{
	char c;

	pid_t pid;
	int st;

	sbx_child_close_others(a);
	if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
		sbx_child_die(a, "unshare", "mount and pid namespaces");
	build_template(a);
	/* The kernel lets a user namespace mount a proc only where one is already fully visible in
	 * its mount namespace (mount_too_revealing): the template holds a proc of a pid namespace
	 * that is empty once our first child has gone. It shows nothing, and each run mounts its
	 * own over it. */
	pid = fork();
	if (pid < 0)
		sbx_child_die(a, "fork", "template proc");
	if (pid == 0)
		_exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			    "hidepid=invisible,subset=pid") < 0
			  ? errno
			  : 0);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
		sbx_child_die(a, "mount", "template /proc");
	}
	if (write(a->ctl_fd, "r", 1) != 1)
		sbx_child_die(a, "report ready", "template");
	/* The slot opens our mount namespace, then closes its end: we are no longer needed. */
	while (read(a->ctl_fd, &c, 1) > 0) {
	}
	_exit(0);
}
