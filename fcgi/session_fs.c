/* session_fs.c: host-side file operations inside a session's root. Code running in the session
 * may have left symlinks, FIFOs, unreadable directories or deep trees anywhere, and may still be
 * changing them during a call: every lookup goes through openat2 with RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS, or is a single name relative to an fd with O_NOFOLLOW /
 * AT_SYMLINK_NOFOLLOW, so nothing here ever follows a path the program could have redirected. */
#include <dirent.h>
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

#include "session.h"

#define FS_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define FS_CHUNK (64u << 10)
#define FS_RM_MAX_DEPTH 64 /* deeper subtrees are moved up to the top and removed from there */

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
		    (n == 2 && path[seg] == '.' && path[seg + 1] == '.'))
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

/* Open directory name beneath dirfd for reading, making it readable and writable when the
 * program left it mode 000 (on disk it is ours, so chmod without following is allowed). */
static int fs_open_dir_rw(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == EACCES && fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;

		if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
			(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	}
	return fd;
}

/* Empty the directory fd (consumed). top is the tree's top directory: subtrees deeper than
 * FS_RM_MAX_DEPTH are renamed into it (no fd held for them) and the caller loops. *moved counts
 * them. 0 or -errno. */
static int fs_rm_contents(int fd, int top, int depth, int *moved)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno == ENOENT)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			rc = -errno;
			continue;
		}
		if (depth >= FS_RM_MAX_DEPTH) {
			char tmp[64];

			fs_temp_name(tmp, sizeof(tmp), ".sbx-deep-");
			if (renameat(dirfd(d), e->d_name, top, tmp) == 0)
				(*moved)++;
			else
				rc = -errno;
			continue;
		}
		sub = fs_open_dir_rw(dirfd(d), e->d_name);
		if (sub < 0) {
			if (errno != ENOENT)
				rc = -errno;
			continue;
		}
		(void)fs_rm_contents(sub, top, depth + 1, moved);
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			rc = -errno;
	}
	closedir(d);
	return rc;
}

int fs_rm_tree(int dirfd, const char *name)
{
	int rc = 0, top = -1;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	top = fs_open_dir_rw(dirfd, name);
	if (top < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Each pass removes what it can; subtrees moved up from too deep are removed by the next
	 * pass. A pass that moved nothing and still left entries means a real error. */
	for (int pass = 0; pass < 1000; pass++) {
		int moved = 0, fd = dup(top);

		if (fd < 0) {
			rc = -errno;
			break;
		}
		(void)lseek(top, 0, SEEK_SET);
		rc = fs_rm_contents(fd, top, 1, &moved);
		if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
			rc = 0;
			break;
		}
		if (errno != ENOTEMPTY && errno != EEXIST) {
			rc = -errno;
			break;
		}
		if (moved == 0 && pass > 0) {
			rc = rc ? rc : -ENOTEMPTY;
			break;
		}
	}
	close(top);
	return rc;
}

int fs_discard(int dirfd, const char *name, const char *prefix)
{
	char tmp[80];

	fs_temp_name(tmp, sizeof(tmp), prefix);
	if (renameat(dirfd, name, dirfd, tmp) < 0)
		return -errno;
	return fs_rm_tree(dirfd, tmp);
}

/* Copy the regular file name (already lstat'ed as st) from src to dst. */
static int fs_copy_file(int src, int dst, const char *name, const struct stat *st, uint64_t *budget)
{
	int in = -1, out = -1, rc = 0;
	struct stat ist;
	char *buf = NULL;

	/* O_NONBLOCK: if the entry was swapped for a FIFO since the lstat, open must not hang. */
	in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0) {
		rc = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	if (fstat(in, &ist) < 0 || !S_ISREG(ist.st_mode) || ist.st_ino != st->st_ino)
		goto out; /* replaced meanwhile: skip, as for any non-regular entry */
	out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     ist.st_mode & 0777);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, FS_CHUNK * 16, 0);

		if (n < 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			/* Fallback for file systems without copy_file_range. */
			if (!buf && !(buf = malloc(FS_CHUNK))) {
				rc = -ENOMEM;
				goto out;
			}
			n = read(in, buf, FS_CHUNK);
			if (n > 0 && write(out, buf, (size_t)n) != n) {
				rc = errno ? -errno : -EIO;
				goto out;
			}
		}
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		if ((uint64_t)n > *budget) {
			rc = -EDQUOT;
			goto out;
		}
		*budget -= (uint64_t)n;
	}
	{
		struct timespec ts[2] = {ist.st_atim, ist.st_mtim};

		(void)futimens(out, ts);
	}
out:
	free(buf);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

static int fs_copy_dir(int src, int dst, uint64_t *budget, int depth)
{
	DIR *d = NULL;
	struct dirent *e;
	int rc = 0, fd = dup(src);

	if (fd < 0 || !(d = fdopendir(fd))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(src, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISREG(st.st_mode)) {
			rc = fs_copy_file(src, dst, e->d_name, &st, budget);
		} else if (S_ISLNK(st.st_mode)) {
			char target[SESSION_PATH_MAX + 1];
			ssize_t n = readlinkat(src, e->d_name, target, sizeof(target) - 1);

			if (n < 0)
				continue;
			target[n] = '\0';
			if ((uint64_t)n > *budget)
				rc = -EDQUOT;
			else if (symlinkat(target, dst, e->d_name) < 0)
				rc = -errno;
			else
				*budget -= (uint64_t)n;
		} else if (S_ISDIR(st.st_mode)) {
			int s = -1, t = -1;

			if (depth >= SESSION_WALK_MAX_DEPTH) {
				rc = -ELOOP;
				break;
			}
			if (mkdirat(dst, e->d_name, (st.st_mode & 0777) | 0700) < 0) {
				rc = -errno;
				break;
			}
			s = openat(src, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			t = openat(dst, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s < 0 || t < 0)
				rc = -errno;
			else
				rc = fs_copy_dir(s, t, budget, depth + 1);
			if (s >= 0)
				close(s);
			if (t >= 0)
				close(t);
		}
		/* FIFOs, sockets and devices are not data: skipped. */
	}
	closedir(d);
	return rc;
}

int fs_copy_tree(int src, int dst, uint64_t *budget)
{
	return fs_copy_dir(src, dst, budget, 0);
}

struct walk_state {
	size_t max, seen, pending; /* pending: names collected by outer levels, not yet visited */
	bool cut;                  /* some directory was not read to its end */
	fs_walk_cb cb;
	void *ctx;
	char path[SESSION_PATH_MAX + SESSION_NAME_MAX + 2];
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int fs_walk_dir(int fd, size_t plen, int depth, struct walk_state *w)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0, done = 0;
	bool counted = false;
	int rc = 0;

	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* Names first, so the listing is sorted and no DIR stream stays open across the recursion
	 * longer than needed. At most what is left of the entry budget (+1 to detect the cut). */
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (w->seen + w->pending + n >= w->max) {
			w->cut = true; /* the outer levels' pending names still get their places */
			break;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn = realloc(names, ncap * sizeof(*names));

			if (!nn) {
				rc = -ENOMEM;
				goto out;
			}
			names = nn;
			cap = ncap;
		}
		if (!(names[n] = strdup(e->d_name))) {
			rc = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	w->pending += n;
	counted = true;
	for (; done < n; done++) {
		const char *name = names[done];
		struct stat st;
		size_t len = strlen(name);
		int r;

		w->pending--;

		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (plen + 1 + len > SESSION_PATH_MAX)
			continue; /* not addressable through the API anyway */
		w->seen++;
		if (plen)
			w->path[plen] = '/';
		memcpy(w->path + plen + (plen ? 1 : 0), name, len + 1);
		r = w->cb(w->ctx, w->path, &st);
		if (r) {
			rc = r;
			goto out;
		}
		if (S_ISDIR(st.st_mode) && depth + 1 < SESSION_WALK_MAX_DEPTH) {
			int sub =
			    openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				r = fs_walk_dir(sub, plen + (plen ? 1 : 0) + len, depth + 1, w);
				if (r) {
					rc = r;
					goto out;
				}
			}
		}
		w->path[plen] = '\0';
	}
out:
	if (counted && done < n)
		w->pending -= n - done - 1; /* the one being visited was already counted */
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

int fs_walk(int dirfd, size_t max_entries, fs_walk_cb cb, void *ctx)
{
	struct walk_state *w = calloc(1, sizeof(*w));
	int fd, rc;

	if (!w)
		return -ENOMEM;
	w->max = max_entries;
	w->cb = cb;
	w->ctx = ctx;
	fd = dup(dirfd);
	if (fd < 0) {
		rc = -errno;
	} else {
		(void)lseek(fd, 0, SEEK_SET);
		rc = fs_walk_dir(fd, 0, 0, w);
		if (rc == 0 && w->cut)
			rc = 1;
	}
	free(w);
	return rc;
}

struct usage {
	uint64_t bytes, files;
};

static int usage_cb(void *ctx, const char *path, const struct stat *st)
{
	struct usage *u = ctx;

	(void)path;
	if (S_ISDIR(st->st_mode))
		return 0;
	u->files++;
	if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))
		u->bytes += (uint64_t)st->st_size;
	return 0;
}

int fs_usage(int root, uint64_t *bytes, uint64_t *files)
{
	struct usage u = {0, 0};
	int fd = fs_open(root, ".", O_RDONLY | O_DIRECTORY, 0);
	int rc;

	if (fd < 0)
		return fd;
	rc = fs_walk(fd, SESSION_WALK_MAX_ENTRIES, usage_cb, &u);
	close(fd);
	if (rc == 1)
		rc = -EDQUOT; /* more entries than we are willing to count: treat as full */
	*bytes = u.bytes;
	if (files)
		*files = u.files;
	return rc;
}

void fs_error(struct api_resp *resp, int err, const char *field, const char *path)
{
	switch (err) {
	case EINVAL:
	case ENAMETOOLONG:
		api_error(resp, 400, "malformed_path", field,
			  "The path must be relative, without \"..\", \".\" or empty segments, at "
			  "most %d bytes (%d per segment).",
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
	fs_temp_name(tmp, sizeof(tmp), ".sbx-tmp-");
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
