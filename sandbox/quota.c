/* quota.c: per-session disk quotas that hold inside runs, on btrfs.
 *
 * ext4 and XFS project quotas need CONFIG_QUOTA, which many kernels (this one included) lack;
 * btrfs qgroups do not. A session directory that is the root of its own btrfs subvolume gets a
 * qgroup limit on referenced bytes, so a run that fills it gets EDQUOT like any other writer.
 * Setting the limit needs CAP_SYS_ADMIN: the broker does it for the unprivileged workers. */
#include <errno.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "internal.h"

#define BTRFS_SUBVOL_ROOT_INO 256 /* BTRFS_FIRST_FREE_OBJECTID: every subvolume's root */

int sbx_quota_capable(int dirfd)
{
	struct statfs sf;
	struct stat st;

	if (fstatfs(dirfd, &sf) < 0 || fstat(dirfd, &st) < 0)
		return -errno;
	if (sf.f_type != BTRFS_SUPER_MAGIC)
		return -EOPNOTSUPP;
	if (!S_ISDIR(st.st_mode) || st.st_ino != BTRFS_SUBVOL_ROOT_INO)
		return -ENOTDIR;
	return 0;
}

int sbx_quota_set(int dirfd, uint64_t bytes, char *err, size_t errlen)
{
	struct btrfs_ioctl_qgroup_limit_args a;
	int rc = sbx_quota_capable(dirfd);

	if (rc < 0) {
		sbx_set_error(err, errlen, "quota: not the root of a btrfs subvolume: %s",
		              strerror(-rc));
		return rc;
	}
	memset(&a, 0, sizeof a);
	a.qgroupid = 0; /* the subvolume dirfd belongs to */
	a.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	a.lim.max_rfer = bytes;
	if (ioctl(dirfd, BTRFS_IOC_QGROUP_LIMIT, &a) < 0) {
		rc = -errno;
		sbx_set_error(err, errlen, "quota: qgroup limit: %s%s", strerror(errno),
		              errno == ENOTCONN ? " (run `btrfs quota enable` on the filesystem)" : "");
		return rc;
	}
	return 0;
}
