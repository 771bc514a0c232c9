/* scratch.c: private directories for stateless runs (state_dir/scratch/<uuid>), and the removal
 * of those a crashed worker left behind. The sandboxed program's files in them are stored as the
 * sbx user (idmapped mount), so the worker can always remove them. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session.h"

/* Scratch directories left by a worker that died during a run. */
void scratch_sweep(const struct config *cfg, int64_t now)
{
	int top = session_top_fd(cfg, "scratch");
	int fd = top >= 0 ? openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' || fstatat(top, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (st.st_mtime + SESSION_STALE_S < now)
			(void)fs_rm_tree(top, e->d_name);
	}
	closedir(d);
out:
	if (top >= 0)
		close(top);
}

int scratch_create(const struct config *cfg, char *path, size_t pathlen, struct api_resp *resp)
{
	char name[40];
	int top = session_top_fd(cfg, "scratch"), fd = -1;

	if (top < 0 || session_uuid(name, sizeof(name)) < 0 || mkdirat(top, name, 0755) < 0) {
		api_error(resp, 500, "internal_error", NULL, "No scratch directory could be made.");
		goto out;
	}
	fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 ||
	    snprintf(path, pathlen, "%s/scratch/%s", cfg->state_dir, name) >= (int)pathlen) {
		api_error(resp, 500, "internal_error", NULL, "No scratch directory could be made.");
		if (fd >= 0)
			close(fd);
		fd = -1;
		(void)fs_rm_tree(top, name);
	}
out:
	if (top >= 0)
		close(top);
	return fd;
}

void scratch_destroy(const struct config *cfg, int fd, const char *path)
{
	const char *name = path ? strrchr(path, '/') : NULL;
	int top;

	if (fd >= 0)
		close(fd);
	/* Only a name we made (a UUID) directly under scratch/ is ever removed. */
	if (!name || !session_id_valid(name + 1, strlen(name + 1)))
		return;
	if ((top = session_top_fd(cfg, "scratch")) < 0)
		return;
	(void)fs_rm_tree(top, name + 1);
	close(top);
}
