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

void fs_error(struct api_resp *resp, int err, const char *field, const char *path)
{
	switch (err) {
	case EINVAL:
	case ENAMETOOLONG:
		api_error(resp, 400, "malformed_path", field,
			  "The path must be relative, without \"..\", \".\" or empty segments, at "
			  "most %d bytes (%d per segment); names beginning \"" FS_UPLOAD_PREFIX
			  "\" are reserved for uploads in flight.",
			  SESSION_PATH_MAX, SESSION_NAME_MAX);
		break;
	case ENOENT:
	case ELOOP:
	case EXDEV:
	case ENOTDIR:
		api_error(resp, 404, "not_found", field,
			  "No file \"%.200s\" in this session (symlinks are not followed).", path);
		break;
	case EISDIR:
		api_error(resp, 409, "is_a_directory", field, "\"%.200s\" is a directory.", path);
		break;
	case EEXIST:
		api_error(resp, 409, "already_exists", field,
			  "\"%.200s\" already exists; pass \"overwrite\": true to replace it.",
			  path);
		break;
	case ENOTEMPTY:
		api_error(resp, 409, "directory_not_empty", field,
			  "\"%.200s\" is a directory that is not empty.", path);
		break;
	case EDQUOT:
	case EFBIG:
		api_error(resp, 507, "quota_exceeded", NULL,
			  "The session's disk quota is exhausted; delete files first.");
		break;
	case ENOSPC:
		/* The server's disk, not this session's quota (that one is EDQUOT, or our own count):
		 * nothing was written, and the caller's own deletions may not help. */
		api_error(resp, 507, "insufficient_storage", NULL,
			  "The server is out of disk space; nothing was written. Retry later.");
		api_header(resp, "Retry-After: 30");
		break;
	case EACCES:
	case EPERM:
		api_error(resp, 403, "permission_denied", field,
			  "\"%.200s\" is not accessible (its permissions were changed).", path);
		break;
	default:
		api_error(resp, 500, "internal_error", NULL, "File operation failed: %s.",
			  strerror(err));
		break;
	}
}

static void fs_quota_error(struct api_resp *resp, uint64_t limit, uint64_t quota)
{
	api_error(resp, 507, "quota_exceeded", NULL,
		  "This write does not fit: %llu bytes are left of the session's %llu-byte quota; "
		  "delete files first.",
		  (unsigned long long)limit, (unsigned long long)quota);
}

/* The preamble of every file route: check the path, open its parent beneath the session root
 * (making it when create), and lstat the last component into *st. Returns the parent's fd, or -1
 * with resp filled. A last component that cannot be stat'ed is an error when must_exist; else *st
 * is zeroed (st_mode 0: nothing there). */
static int fs_locate(struct session *s, const char *path, size_t plen, const char *field,
		     bool create, bool must_exist, const char **base, struct stat *st,
		     struct api_resp *resp)
{
	int parent;

	if (fs_path_check(path, plen) < 0) {
		fs_error(resp, EINVAL, field, path);
		return -1;
	}
	if ((parent = fs_parent(s->root_fd, path, create, base)) < 0) {
		fs_error(resp, -parent, field, path);
		return -1;
	}
	if (fstatat(parent, *base, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (must_exist) {
			fs_error(resp, errno, field, path);
			close(parent);
			return -1;
		}
		memset(st, 0, sizeof(*st));
	}
	return parent;
}

int fs_write_atomic(struct session *s, const char *path, size_t plen, const char *field,
		    struct fs_source *src, bool *created, struct api_resp *resp)
{
	uint64_t quota = s->cfg->session_quota_bytes ? s->cfg->session_quota_bytes : UINT64_MAX;
	uint64_t used = 0, limit, count = 0, old = 0;
	char tmp[64] = "";
	char *buf = NULL;
	const char *base = NULL;
	int parent = -1, fd = -1, lock = -1, rc = -1, e;
	struct stat st;

	if ((parent = fs_locate(s, path, plen, field, true, false, &base, &st, resp)) < 0)
		goto out;
	if (S_ISDIR(st.st_mode)) {
		fs_error(resp, EISDIR, field, path);
		goto out;
	}
	*created = st.st_mode == 0;
	old = (uint64_t)st.st_size;
	if ((e = fs_usage(s->root_fd, &used, NULL)) < 0) {
		fs_error(resp, -e, field, path);
		goto out;
	}
	limit = used > quota ? 0 : quota - used;
	limit = limit > UINT64_MAX - old ? UINT64_MAX : limit + old;
	if (src->total >= 0 && (uint64_t)src->total > limit) {
		fs_quota_error(resp, limit, quota);
		goto out;
	}
	fs_temp_name(tmp, sizeof(tmp), FS_UPLOAD_PREFIX);
	fd = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		tmp[0] = '\0';
		fs_error(resp, errno, field, path);
		goto out;
	}
	if (!(buf = malloc(FS_CHUNK))) {
		fs_error(resp, ENOMEM, field, path);
		goto out;
	}
	for (;;) {
		ssize_t n = src->read(src->ctx, buf, FS_CHUNK);

		if (n < 0) {
			api_error(resp, 400, "body_read_failed", NULL,
				  "The request body could not be read completely.");
			goto out;
		}
		if (n == 0)
			break;
		count += (uint64_t)n;
		if (count > limit) {
			fs_quota_error(resp, limit, quota);
			goto out;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				fs_error(resp, errno, field, path);
				goto out;
			}
			off += w;
		}
	}
	if (src->total >= 0 && count != (uint64_t)src->total) {
		api_error(resp, 400, "body_read_failed", NULL,
			  "The request body ended after %llu of %lld bytes.",
			  (unsigned long long)count, (long long)src->total);
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		fs_error(resp, errno, field, path);
		goto out;
	}
	fd = -1;
	/* Under the lock, writers of this session see each other's temp files: the sum stays
	 * within the quota even when several uploads race. */
	if ((lock = session_lock(s)) < 0) {
		fs_error(resp, EIO, field, path);
		goto out;
	}
	if ((e = fs_usage(s->root_fd, &used, NULL)) < 0) {
		fs_error(resp, -e, field, path);
		goto out;
	}
	old = fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)
		  ? (uint64_t)st.st_size
		  : 0;
	if (used - (old < used ? old : used) > quota) {
		/* Everything but this upload and the file it replaces: what was left for it. */
		uint64_t rest = used - (count < used ? count : used);

		rest -= old < rest ? old : rest;
		fs_quota_error(resp, rest < quota ? quota - rest : 0, quota);
		goto out;
	}
	if (renameat(parent, tmp, parent, base) < 0) {
		fs_error(resp, errno, field, path);
		goto out;
	}
	tmp[0] = '\0';
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
	free(buf);
	return rc;
}

int fs_delete(struct session *s, const char *path, size_t plen, const char *field,
	      struct api_resp *resp)
{
	const char *base = NULL;
	int parent = -1, rc = -1, e;
	struct stat st;

	if ((parent = fs_locate(s, path, plen, field, false, true, &base, &st, resp)) < 0)
		goto out;
	/* A directory goes with its whole tree: renamed away first so it vanishes at once. */
	e = S_ISDIR(st.st_mode) ? fs_discard(parent, base, ".sbx-del-")
				: (unlinkat(parent, base, 0) < 0 ? -errno : 0);
	if (e < 0) {
		fs_error(resp, -e, field, path);
		goto out;
	}
	rc = 0;
out:
	if (parent >= 0)
		close(parent);
	return rc;
}

int fs_move(struct session *s, const char *from, size_t flen, const char *ffield, const char *to,
	    size_t tlen, const char *tfield, bool overwrite, struct api_resp *resp)
{
	const char *fbase = NULL, *tbase = NULL;
	int fp = -1, tp = -1, rc = -1;
	struct stat st;

	/* Both paths well-formed first: a malformed destination is reported before a missing
	 * source. */
	if (fs_path_check(to, tlen) < 0 && fs_path_check(from, flen) == 0) {
		fs_error(resp, EINVAL, tfield, to);
		goto out;
	}
	if ((fp = fs_locate(s, from, flen, ffield, false, true, &fbase, &st, resp)) < 0)
		goto out;
	if ((tp = fs_parent(s->root_fd, to, true, &tbase)) < 0) {
		fs_error(resp, -tp, tfield, to);
		goto out;
	}
	if (renameat2(fp, fbase, tp, tbase, overwrite ? 0 : RENAME_NOREPLACE) < 0) {
		int err = errno;

		if (err == EINVAL)
			api_error(resp, 400, "invalid_move", tfield,
				  "A directory cannot be moved into itself.");
		else if (err == ENOENT)
			fs_error(resp, err, ffield, from);
		else
			fs_error(resp, err, tfield, to);
		goto out;
	}
	rc = 0;
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
