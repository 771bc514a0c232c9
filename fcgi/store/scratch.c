/* scratch.c: the directories runs see as /work, made on disk: btrfs subvolume roots with a quota
 * (a session's files/, a stateless run's scratch directory) when the store is on btrfs, plain
 * directories otherwise; their removal; and the scratch directories of stateless runs
 * (state_dir/scratch/<uuid>), with the removal of those a crashed worker left behind.
 *
 * Why subvolumes: the file API counts a session's bytes itself, but a run writes straight to the
 * disk. A qgroup limit on the subvolume (set by the broker: it needs CAP_SYS_ADMIN) makes the
 * kernel refuse a run's writes past the quota with EDQUOT (the store asks for it through
 * store_conf.set_quota, which the handlers point at the broker client). The unprivileged worker may
 * create, snapshot (it owns the source) and, on a mount with user_subvol_rm_allowed, destroy them.
 * The sandboxed program's files are stored as the sbx user (idmapped mount), so the worker can
 * always remove them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "store.h"

#define VOL_SUBVOL_ROOT_INO 256 /* BTRFS_FIRST_FREE_OBJECTID: the root of every subvolume */

bool vol_on_btrfs(int dirfd)
{
	struct statfs sf;

	return fstatfs(dirfd, &sf) == 0 && sf.f_type == BTRFS_SUPER_MAGIC;
}

bool vol_is_subvol(int fd)
{
	struct stat st;

	return vol_on_btrfs(fd) && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_ino == VOL_SUBVOL_ROOT_INO;
}

/* Drop the subvolume name in the directory pfd (opened for reading) at once. 0 or -errno (then
 * the caller removes it file by file). */
static int vol_destroy(int pfd, const char *name)
{
	struct btrfs_ioctl_vol_args a;

	memset(&a, 0, sizeof(a));
	if (strlen(name) >= sizeof(a.name))
		return -ENAMETOOLONG;
	memcpy(a.name, name, strlen(name));
	return ioctl(pfd, BTRFS_IOC_SNAP_DESTROY, &a) < 0 ? -errno : 0;
}

int vol_rm_tree(int parent, const char *name)
{
	int pfd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, sub;
	DIR *d = NULL;
	struct dirent *e;

	if (pfd < 0 || !vol_on_btrfs(pfd))
		goto rest;
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto rest;
	/* A subvolume goes in one call, however many files it holds (a session dir's files/, a
	 * scratch dir). One that holds subvolumes a run made is refused: fs_rm_tree below empties
	 * and rmdirs those one by one. */
	if (vol_is_subvol(fd)) {
		if (vol_destroy(pfd, name) == 0)
			goto rest;
	} else if ((sub = dup(fd)) >= 0) {
		if (!(d = fdopendir(sub))) {
			close(sub);
			goto rest;
		}
		while ((e = readdir(d))) {
			int c;

			if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") ||
			    !strcmp(e->d_name, ".."))
				continue;
			c = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (c >= 0 && vol_is_subvol(c))
				(void)vol_destroy(fd, e->d_name);
			if (c >= 0)
				close(c);
		}
		closedir(d);
	}
rest:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return fs_rm_tree(parent, name);
}

/* fs_walk callback: unlink what is not data (FIFOs, sockets, devices) and uploads in flight. */
static int strip_cb(void *ctx, const char *path, const struct stat *st)
{
	const char *base;
	int root = *(int *)ctx, p;

	if ((S_ISREG(st->st_mode) && !fs_upload_temp_path(path)) || S_ISDIR(st->st_mode) ||
	    S_ISLNK(st->st_mode))
		return 0;
	if ((p = fs_parent(root, path, false, &base)) >= 0) {
		(void)unlinkat(p, base, 0);
		close(p);
	}
	return 0;
}

/* A snapshot of snap_src named name in pfd: instant, and a consistent copy even while a run
 * writes the source. It joins the volume's reserve group (STORE_RESERVE_QGROUP, made by the broker
 * when it keeps a disk reserve) as it is made: a snapshot of a group member that is left out of the
 * group, or assigned to it later, makes every qgroup of the volume inconsistent, and per-session
 * quotas then stop holding. ENOENT for the group means the volume keeps no reserve: a plain
 * snapshot is then exactly right. 0 or -1 with errno set. */
static int vol_snapshot(int pfd, int snap_src, const char *name)
{
	union {
		struct btrfs_qgroup_inherit h;
		__u64 room[sizeof(struct btrfs_qgroup_inherit) / sizeof(__u64) + 1];
	} inherit;
	struct btrfs_ioctl_vol_args_v2 a;

	memset(&inherit, 0, sizeof(inherit));
	inherit.h.num_qgroups = 1;
	inherit.h.qgroups[0] = STORE_RESERVE_QGROUP;
	memset(&a, 0, sizeof(a));
	a.fd = snap_src;
	a.flags = BTRFS_SUBVOL_QGROUP_INHERIT;
	a.size = sizeof(inherit);
	a.qgroup_inherit = &inherit.h;
	snprintf(a.name, sizeof(a.name), "%s", name);
	if (ioctl(pfd, BTRFS_IOC_SNAP_CREATE_V2, &a) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	memset(&a, 0, sizeof(a));
	a.fd = snap_src;
	snprintf(a.name, sizeof(a.name), "%s", name);
	return ioctl(pfd, BTRFS_IOC_SNAP_CREATE_V2, &a);
}

int vol_make_root(const struct store_conf *conf, int parent, const char *name, int snap_src,
		  bool *copied, struct store_err *e)
{
	int pfd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, rc = -1, q;
	bool made = false;
	char err[256] = "";

	*copied = false;
	if (pfd < 0) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	if (!vol_on_btrfs(pfd)) {
		if (mkdirat(pfd, name, 0755) < 0) {
			rc = store_fail(e, errno, STORE_WHY_NONE, 0);
			goto out;
		}
		rc = 0;
		goto out;
	}
	if (snap_src >= 0 && vol_is_subvol(snap_src)) {
		if (vol_snapshot(pfd, snap_src, name) < 0) {
			rc = store_fail(e, errno, STORE_WHY_NONE, 0);
			goto out;
		}
		*copied = true;
	} else {
		struct btrfs_ioctl_vol_args a;

		memset(&a, 0, sizeof(a));
		snprintf(a.name, sizeof(a.name), "%s", name);
		if (ioctl(pfd, BTRFS_IOC_SUBVOL_CREATE, &a) < 0) {
			rc = store_fail(e, errno, STORE_WHY_NONE, 0);
			goto out;
		}
	}
	made = true;
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || (!*copied && fchmod(fd, 0755) < 0)) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	if (conf->quota_bytes) {
		q = conf->set_quota ? conf->set_quota(conf->set_quota_ctx, fd, conf->quota_bytes,
						      err, sizeof(err))
				    : -ENOSYS;
		if (q < 0) {
			if (!err[0])
				snprintf(err, sizeof(err), "no way to set a quota was given");
			rc = store_fail(e, EIO, STORE_WHY_VOLUME, 0);
			if (e)
				snprintf(e->msg, sizeof(e->msg), "%s", err);
			goto out;
		}
	}
	/* A snapshot copies everything; a copy keeps only files, directories and symlinks, and no
	 * upload in flight (as fs_copy_tree does), so a fork is the same on every file system. */
	if (*copied)
		(void)fs_walk(fd, SESSION_WALK_MAX_ENTRIES, strip_cb, &fd);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && made)
		(void)vol_rm_tree(pfd, name);
	if (pfd >= 0)
		close(pfd);
	return rc;
}

bool session_quota_in_runs(const struct store_conf *conf)
{
	struct btrfs_ioctl_fs_info_args fi;
	char path[128];
	struct stat st;
	int top = session_top_fd(conf, "sessions"), fd = -1;
	bool ok = false;

	/* On btrfs, with quotas enabled (sysfs shows qgroups/ then), and a quota configured. */
	if (top < 0 || !conf->quota_bytes)
		goto out;
	fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	memset(&fi, 0, sizeof(fi));
	if (fd < 0 || !vol_on_btrfs(fd) || ioctl(fd, BTRFS_IOC_FS_INFO, &fi) < 0)
		goto out;
	snprintf(path, sizeof(path), "/sys/fs/btrfs/");
	for (int i = 0; i < 16; i++)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%02x",
			 (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", fi.fsid[i]);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/qgroups");
	ok = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
out:
	if (fd >= 0)
		close(fd);
	if (top >= 0)
		close(top);
	return ok;
}

/* Scratch directories left by a worker that died during a run. */
void scratch_sweep(const struct store_conf *conf, int64_t now)
{
	int top = session_top_fd(conf, "scratch");
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
			(void)vol_rm_tree(top, e->d_name);
	}
	closedir(d);
out:
	if (top >= 0)
		close(top);
}

int scratch_create(const struct store_conf *conf, char *path, size_t pathlen, struct store_err *e)
{
	char name[40];
	bool copied;
	int top = -1, fd;

	if ((fd = store_reserve_check(conf, 0, e)) < 0)
		return fd;
	if ((top = session_top_fd(conf, "scratch")) < 0 || session_uuid(name, sizeof(name)) < 0) {
		fd = store_fail(e, top < 0 ? EIO : EAGAIN, STORE_WHY_NONE, 0);
		goto out;
	}
	/* On btrfs a subvolume with the session quota: a stateless run cannot fill the disk. */
	if ((fd = vol_make_root(conf, top, name, -1, &copied, e)) < 0)
		goto out;
	fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 ||
	    snprintf(path, pathlen, "%s/scratch/%s", conf->state_dir, name) >= (int)pathlen) {
		int err = fd < 0 ? errno : ENAMETOOLONG;

		if (fd >= 0)
			close(fd);
		fd = store_fail(e, err, STORE_WHY_NONE, 0);
		(void)vol_rm_tree(top, name);
	}
out:
	if (top >= 0)
		close(top);
	return fd;
}

void scratch_destroy(const struct store_conf *conf, int fd, const char *path)
{
	const char *name = path ? strrchr(path, '/') : NULL;
	int top;

	if (fd >= 0)
		close(fd);
	/* Only a name we made (a UUID) directly under scratch/ is ever removed. */
	if (!name || !session_id_valid(name + 1, strlen(name + 1)))
		return;
	if ((top = session_top_fd(conf, "scratch")) < 0)
		return;
	(void)vol_rm_tree(top, name + 1);
	close(top);
}
