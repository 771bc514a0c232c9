/* counters.c: what GET /v1/metrics counts on disk (handlers/metrics.c prints it): sessions on the
 * volume, and nginx's own refusals, which nginx logs as one fixed 2-byte line ("1\n") each in a
 * file per reason under state_dir/log (nginx/nginx.conf.in, nginx/sbx-site.conf.in), so a count
 * is the file's size over 2: one fstatat, however many refusals there were. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

int store_session_count(const struct store_conf *conf, uint64_t *n)
{
	struct dirent *d;
	DIR *dir;
	int fd;

	*n = 0;
	if (!conf || !conf->state_dir)
		return -EINVAL;
	/* sessions/<client>/<session>/: a directory per client, one per session in it. */
	fd = session_top_fd(conf, "sessions");
	if (fd < 0)
		return -EIO;
	/* session_top_fd gives an O_PATH fd: a readable one of the same directory for readdir. */
	{
		int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		close(fd);
		if (rfd < 0)
			return -errno;
		fd = rfd;
	}
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	while ((d = readdir(dir))) {
		struct dirent *e;
		DIR *sub;
		int cfd;

		if (d->d_name[0] == '.')
			continue;
		cfd =
		    openat(dirfd(dir), d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		sub = fdopendir(cfd);
		if (!sub) {
			close(cfd);
			continue;
		}
		while ((e = readdir(sub)))
			if (e->d_name[0] != '.' && e->d_type == DT_DIR)
				(*n)++;
		closedir(sub);
	}
	closedir(dir);
	return 0;
}

int store_refusal_count(const struct store_conf *conf, const char *name, uint64_t *n)
{
	char path[PATH_MAX];
	struct stat st;

	*n = 0;
	if (!conf || !conf->state_dir || !name || strchr(name, '/') || name[0] == '.')
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/log/%s", conf->state_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* Never a link (the log directory is root's, but a count is not worth following one). */
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
				       : -errno; /* no refusal yet: nginx makes it on the first */
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*n = (uint64_t)st.st_size / 2;
	return 0;
}
