/* fs.c: the file operations of a session's files (the API's reads, atomic writes, deletes and
 * moves), over the path primitives of path.c: code running in the session may have left
 * symlinks, FIFOs, sockets, unreadable directories or deep trees anywhere, and may still be
 * changing them during a call, so nothing here follows a path or opens what is not a regular
 * file. Each call returns 0 or -errno with struct store_err filled. */
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
		rc = session_lock_fail(e);
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
	/* A path that vanished because the whole session did (a concurrent delete): the session
	 * is gone (404 session_not_found), not a file of it. */
	if (rc == -ENOENT && e && e->why == STORE_WHY_NONE && session_gone(s))
		e->why = STORE_WHY_SESSION;
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
