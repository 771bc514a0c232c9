/* path.c: the safe path primitives beneath a root fd. Code running in the session may have
 * left symlinks, FIFOs, unreadable directories or deep trees anywhere, and may still be changing
 * them during a call: every lookup goes through openat2 with RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS, or is a single name relative to an fd with O_NOFOLLOW /
 * AT_SYMLINK_NOFOLLOW, so nothing here ever follows a path the program could have redirected. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store.h"

#define FS_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

bool fs_upload_temp(const char *name, size_t len)
{
	return len >= sizeof(FS_UPLOAD_PREFIX) - 1 &&
	       !memcmp(name, FS_UPLOAD_PREFIX, sizeof(FS_UPLOAD_PREFIX) - 1);
}

bool fs_upload_temp_path(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;

	return fs_upload_temp(base, strlen(base));
}

int fs_path_check(const char *path, size_t len)
{
	size_t seg = 0;

	if (!path || len == 0 || len > SESSION_PATH_MAX || memchr(path, '\0', len) ||
	    path[0] == '/')
		return -1;
	for (size_t i = 0; i <= len; i++) {
		size_t n;

		if (i < len && path[i] != '/')
			continue;
		n = i - seg;
		if (n == 0 || n > SESSION_NAME_MAX || (n == 1 && path[seg] == '.') ||
		    (n == 2 && path[seg] == '.' && path[seg + 1] == '.') ||
		    fs_upload_temp(path + seg, n))
			return -1;
		seg = i + 1;
	}
	return 0;
}

int fs_open(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
	    .resolve = FS_RESOLVE,
	};
	long fd = -1;

	/* EAGAIN: a concurrent rename somewhere in the tree; the kernel asks us to retry. */
	for (int i = 0; i < 32; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd >= 0 ? (int)fd : -errno;
}

int fs_parent(int root, const char *path, bool create, const char **base)
{
	char seg[SESSION_NAME_MAX + 1];
	const char *slash = strrchr(path, '/');
	const char *p = path;
	int cur = -1, next;

	*base = slash ? slash + 1 : path;
	if (!slash)
		return fs_open(root, ".", O_PATH | O_DIRECTORY, 0);
	if (!create) {
		char dir[SESSION_PATH_MAX + 1];
		size_t n = (size_t)(slash - path);

		if (n > SESSION_PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(dir, path, n);
		dir[n] = '\0';
		return fs_open(root, dir, O_PATH | O_DIRECTORY, 0);
	}
	cur = fs_open(root, ".", O_PATH | O_DIRECTORY, 0);
	while (cur >= 0 && p < slash) {
		const char *end = strchr(p, '/');
		size_t n = (size_t)(end - p);

		if (n > SESSION_NAME_MAX) {
			close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(seg, p, n);
		seg[n] = '\0';
		/* mkdirat never follows a symlink in the last component (EEXIST); the open below
		 * then refuses it. */
		if (mkdirat(cur, seg, 0755) < 0 && errno != EEXIST) {
			next = -errno;
		} else {
			next = fs_open(cur, seg, O_PATH | O_DIRECTORY, 0);
		}
		close(cur);
		cur = next;
		p = end + 1;
	}
	return cur;
}

ssize_t fs_mem_read(void *ctx, char *buf, size_t len)
{
	struct fs_mem *m = ctx;
	size_t n = m->len - m->off < len ? m->len - m->off : len;

	memcpy(buf, m->buf + m->off, n);
	m->off += n;
	return (ssize_t)n;
}
