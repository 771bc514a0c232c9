/* fs.c: host-side file operations inside a session's root. Code running in the session
 * may have left symlinks, FIFOs, unreadable directories or deep trees anywhere, and may still be
 * changing them during a call: every lookup goes through openat2 with RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS, or is a single name relative to an fd with O_NOFOLLOW /
 * AT_SYMLINK_NOFOLLOW, so nothing here ever follows a path the program could have redirected. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
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

void fs_temp_name(char *out, size_t outlen, const char *prefix)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)out;
	snprintf(out, outlen, "%s%016llx", prefix, (unsigned long long)r);
}

int store_fail(struct store_err *e, int err, enum store_why why, int at)
{
	if (err < 0)
		err = -err;
	if (err == 0)
		err = EIO;
	if (e) {
		e->err = err;
		e->why = why;
		e->at = at;
	}
	return -err;
}

/* The preamble of every file call: check the path, open its parent beneath the session root
 * (making it when create), and lstat the last component into *st. Returns the parent's fd, or
 * -errno with e filled. A last component that cannot be stat'ed is an error when must_exist;
 * else *st is zeroed (st_mode 0: nothing there). */
static int fs_locate(int root, const char *path, size_t plen, int at, bool create, bool must_exist,
		     const char **base, struct stat *st, struct store_err *e)
{
	int parent;

	if (fs_path_check(path, plen) < 0)
		return store_fail(e, EINVAL, STORE_WHY_PATH, at);
	if ((parent = fs_parent(root, path, create, base)) < 0)
		return store_fail(e, -parent, STORE_WHY_NONE, at);
	if (fstatat(parent, *base, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (must_exist) {
			int err = errno;

			close(parent);
			return store_fail(e, err, STORE_WHY_NONE, at);
		}
		memset(st, 0, sizeof(*st));
	}
	return parent;
}

int fs_open_file(int root, const char *path, size_t len, struct stat *st, struct store_err *e)
{
	const char *base;
	int parent, fd;

	/* lstat first: a socket cannot be opened at all (ENXIO), a FIFO would block, and neither
	 * is a file of the session's to read. */
	if ((parent = fs_locate(root, path, len, 0, false, true, &base, st, e)) < 0)
		return parent;
	close(parent);
	if (S_ISDIR(st->st_mode))
		return store_fail(e, EISDIR, STORE_WHY_NONE, 0);
	if (S_ISLNK(st->st_mode))
		return store_fail(e, ELOOP, STORE_WHY_NONE, 0);
	if (!S_ISREG(st->st_mode))
		return store_fail(e, ENXIO, STORE_WHY_SPECIAL, 0);
	/* O_NONBLOCK: should it have been swapped for a FIFO since, open must not hang. */
	if ((fd = fs_open(root, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0)) < 0)
		return store_fail(e, fd == -ENXIO ? ENXIO : -fd,
				  fd == -ENXIO ? STORE_WHY_SPECIAL : STORE_WHY_NONE, 0);
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		int err = S_ISDIR(st->st_mode) ? EISDIR : ENXIO;

		close(fd);
		return store_fail(e, err, err == ENXIO ? STORE_WHY_SPECIAL : STORE_WHY_NONE, 0);
	}
	return fd;
}

static int fs_quota_fail(struct store_err *e, uint64_t left, uint64_t quota)
{
	if (e) {
		e->left = left;
		e->limit = quota;
	}
	return store_fail(e, EDQUOT, STORE_WHY_QUOTA, 0);
}

/* Copy src into the open file fd, at most limit bytes. 0 or -errno (e filled); *count gets the
 * bytes read. */
static int fs_fill(int fd, struct fs_source *src, uint64_t limit, uint64_t quota, uint64_t *count,
		   struct store_err *e)
{
	char *buf = malloc(FS_CHUNK);
	int rc = 0;

	*count = 0;
	if (!buf)
		return store_fail(e, ENOMEM, STORE_WHY_NONE, 0);
	for (;;) {
		ssize_t n = src->read(src->ctx, buf, FS_CHUNK);

		if (n < 0) {
			rc = store_fail(e, EIO, STORE_WHY_SOURCE, 0);
			break;
		}
		if (n == 0)
			break;
		*count += (uint64_t)n;
		if (*count > limit) {
			rc = fs_quota_fail(e, limit, quota);
			break;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rc = store_fail(e, errno, STORE_WHY_NONE, 0);
				goto out;
			}
			off += w;
		}
	}
	if (rc == 0 && src->total >= 0 && *count != (uint64_t)src->total) {
		if (e) {
			e->left = *count;
			e->limit = (uint64_t)src->total;
		}
		rc = store_fail(e, EIO, STORE_WHY_SOURCE, 0);
	}
out:
	free(buf);
	return rc;
}

int fs_write_atomic(struct session *s, const char *path, size_t plen, struct fs_source *src,
		    bool *created, uint64_t *size, struct store_err *e)
{
	uint64_t quota = s->conf->quota_bytes ? s->conf->quota_bytes : UINT64_MAX;
	uint64_t used = 0, limit, count = 0, old = 0;
	char tmp[64] = "";
	const char *base = NULL;
	int parent = -1, fd = -1, lock = -1, rc;
	struct stat st;

	if ((rc = parent = fs_locate(s->root_fd, path, plen, 0, true, false, &base, &st, e)) < 0)
		goto out;
	if (S_ISDIR(st.st_mode)) {
		rc = store_fail(e, EISDIR, STORE_WHY_NONE, 0);
		goto out;
	}
	*created = st.st_mode == 0;
	old = (uint64_t)st.st_size;
	if ((rc = store_reserve_check(s->conf, src->total > 0 ? (uint64_t)src->total : 0, e)) < 0)
		goto out;
	if ((rc = fs_usage(s->root_fd, &used, NULL)) < 0) {
		rc = store_fail(e, rc, STORE_WHY_NONE, 0);
		goto out;
	}
	limit = used > quota ? 0 : quota - used;
	limit = limit > UINT64_MAX - old ? UINT64_MAX : limit + old;
	if (src->total >= 0 && (uint64_t)src->total > limit) {
		rc = fs_quota_fail(e, limit, quota);
		goto out;
	}
	fs_temp_name(tmp, sizeof(tmp), FS_UPLOAD_PREFIX);
	fd = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		tmp[0] = '\0';
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	if ((rc = fs_fill(fd, src, limit, quota, &count, e)) < 0)
		goto out;
	rc = close(fd);
	fd = -1;
	if (rc < 0) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	/* Under the lock, writers of this session see each other's temp files: the sum stays
	 * within the quota even when several uploads race. */
	if ((lock = session_lock(s)) < 0) {
		rc = store_fail(e, EIO, STORE_WHY_NONE, 0);
		goto out;
	}
	if ((rc = fs_usage(s->root_fd, &used, NULL)) < 0) {
		rc = store_fail(e, rc, STORE_WHY_NONE, 0);
		goto out;
	}
	old = fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)
		  ? (uint64_t)st.st_size
		  : 0;
	if (used - (old < used ? old : used) > quota) {
		/* Everything but this upload and the file it replaces: what was left for it. */
		uint64_t rest = used - (count < used ? count : used);

		rest -= old < rest ? old : rest;
		rc = fs_quota_fail(e, rest < quota ? quota - rest : 0, quota);
		goto out;
	}
	if (renameat(parent, tmp, parent, base) < 0) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	tmp[0] = '\0';
	if (size)
		*size = count;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		(void)unlinkat(parent, tmp, 0);
	if (lock >= 0)
		session_unlock(lock);
	if (parent >= 0)
		close(parent);
	return rc;
}

int fs_delete(struct session *s, const char *path, size_t plen, struct store_err *e)
{
	const char *base = NULL;
	int parent, rc;
	struct stat st;

	if ((parent = fs_locate(s->root_fd, path, plen, 0, false, true, &base, &st, e)) < 0)
		return parent;
	/* A directory goes with its whole tree: renamed away first so it vanishes at once. Any
	 * other entry (a socket or FIFO included) is one unlink, never opened. */
	rc = S_ISDIR(st.st_mode) ? fs_discard(parent, base, ".sbx-del-")
				 : (unlinkat(parent, base, 0) < 0 ? -errno : 0);
	close(parent);
	return rc < 0 ? store_fail(e, rc, STORE_WHY_NONE, 0) : 0;
}

int fs_move(struct session *s, const char *from, size_t flen, const char *to, size_t tlen,
	    bool overwrite, struct store_err *e)
{
	const char *fbase = NULL, *tbase = NULL;
	int fp = -1, tp = -1, rc;
	struct stat st;

	/* Both paths well-formed first: a malformed destination is reported before a missing
	 * source. */
	if (fs_path_check(to, tlen) < 0 && fs_path_check(from, flen) == 0)
		return store_fail(e, EINVAL, STORE_WHY_PATH, 1);
	if ((rc = fp = fs_locate(s->root_fd, from, flen, 0, false, true, &fbase, &st, e)) < 0)
		goto out;
	if ((tp = fs_parent(s->root_fd, to, true, &tbase)) < 0) {
		rc = store_fail(e, tp, STORE_WHY_NONE, 1);
		goto out;
	}
	rc = 0;
	if (renameat2(fp, fbase, tp, tbase, overwrite ? 0 : RENAME_NOREPLACE) < 0) {
		int err = errno;

		if (err == EINVAL)
			rc = store_fail(e, err, STORE_WHY_INTO_SELF, 1);
		else
			rc = store_fail(e, err, STORE_WHY_NONE, err == ENOENT ? 0 : 1);
	}
out:
	if (fp >= 0)
		close(fp);
	if (tp >= 0)
		close(tp);
	return rc;
}

ssize_t fs_mem_read(void *ctx, char *buf, size_t len)
{
	struct fs_mem *m = ctx;
	size_t n = m->len - m->off < len ? m->len - m->off : len;

	memcpy(buf, m->buf + m->off, n);
	m->off += n;
	return (ssize_t)n;
}
