/* tree.c: whole trees inside a session (fs.c has the single-path operations):
 * remove, copy (fork without btrfs), walk (listing) and usage (the quota). The program may have
 * left symlinks, FIFOs, mode-000 directories or very deep trees, and may still be changing them:
 * every step is one name relative to an fd, never followed (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define FS_RM_MAX_DEPTH 64 /* deeper subtrees are moved up to the top and removed from there */

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

/* A stream over the directory fd, which it consumes: on failure fd is closed and *rc = -errno.
 * fd < 0 (a failed open or dup) passes that call's errno through. */
static DIR *fs_opendir_fd(int fd, int *rc)
{
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		*rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	return d;
}

/* "." and "..": no walk visits them. */
static bool fs_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* Empty the directory fd (consumed). top is the tree's top directory: subtrees deeper than
 * FS_RM_MAX_DEPTH are renamed into it (no fd held for them) and the caller loops. *moved counts
 * them. 0 or -errno. */
static int fs_rm_contents(int fd, int top, int depth, int *moved)
{
	struct dirent *e;
	int rc = 0;
	DIR *d = fs_opendir_fd(fd, &rc);

	if (!d)
		return rc;
	while ((e = readdir(d))) {
		int sub;

		if (fs_dot(e->d_name))
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
	struct dirent *e;
	int rc = 0;
	DIR *d = fs_opendir_fd(dup(src), &rc);

	if (!d)
		return rc;
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;

		if (fs_dot(e->d_name))
			continue;
		if (fstatat(src, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISREG(st.st_mode)) {
			/* An upload still being written (or abandoned) is not a file yet. */
			if (!fs_upload_temp(e->d_name, strlen(e->d_name)))
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
	bool cut;		   /* some directory was not read to its end */
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
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0, done = 0;
	bool counted = false;
	int rc = 0;
	DIR *d = fs_opendir_fd(fd, &rc);

	if (!d)
		return rc;
	/* Names first, so the listing is sorted and no DIR stream stays open across the recursion
	 * longer than needed. At most what is left of the entry budget (+1 to detect the cut). */
	while ((e = readdir(d))) {
		if (fs_dot(e->d_name))
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
	int root;
	time_t stale_before; /* upload temp files last written before this are abandoned */
};

static int usage_cb(void *ctx, const char *path, const struct stat *st)
{
	struct usage *u = ctx;

	if (S_ISDIR(st->st_mode))
		return 0;
	if (S_ISREG(st->st_mode) && fs_upload_temp_path(path)) {
		const char *base;
		int p;

		/* nginx hands the worker a whole body, so a live upload writes without pauses:
		 * one untouched this long lost its worker, and nothing else will remove it. */
		if (st->st_mtime < u->stale_before &&
		    (p = fs_parent(u->root, path, false, &base)) >= 0) {
			int gone = unlinkat(p, base, 0) == 0;

			close(p);
			if (gone)
				return 0;
		}
		u->bytes += (uint64_t)st->st_size;
		return 0;
	}
	u->files++;
	if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))
		u->bytes += (uint64_t)st->st_size;
	return 0;
}

int fs_usage(int root, uint64_t *bytes, uint64_t *files)
{
	struct usage u = {0, 0, root, time(NULL) - SESSION_STALE_S};
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
