/* disk.c: the free space of the volume sessions live on (state_dir/sessions), and the reserve every
 * new write keeps free (store_conf.reserve_bytes): sessions, forks, uploads and runs all share one
 * volume, so below the reserve nothing new starts and health says so (handlers/info.c). */
#include <errno.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store.h"

int store_disk_space(const struct store_conf *conf, uint64_t *free_bytes, uint64_t *total_bytes)
{
	struct statvfs sv;
	int fd, rc = 0;

	/* sessions/: where sessions live and, bound or beside it, scratch/ (on the btrfs image or
	 * volume of the stack when there is one, not the state dir's own file system). */
	if (!conf || !conf->state_dir)
		return -EINVAL;
	if ((fd = session_top_fd(conf, "sessions")) < 0)
		return -EIO;
	if (fstatvfs(fd, &sv) < 0)
		rc = -errno;
	close(fd);
	if (rc < 0)
		return rc;
	/* f_bavail: what an unprivileged writer (the sbx user) may still use. */
	if (free_bytes)
		*free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (total_bytes)
		*total_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	return 0;
}

int store_reserve_check(const struct store_conf *conf, uint64_t need, struct store_err *e)
{
	uint64_t avail = 0;

	if (!conf || !conf->reserve_bytes || store_disk_space(conf, &avail, NULL) < 0)
		return 0;
	if (avail > conf->reserve_bytes && avail - conf->reserve_bytes >= need)
		return 0;
	if (e) {
		e->left = avail;
		e->limit = conf->reserve_bytes;
	}
	return store_fail(e, ENOSPC, STORE_WHY_RESERVE, 0);
}
