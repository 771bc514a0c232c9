/* quota.c: per-session disk quotas that hold inside runs, on btrfs.
 *
 * ext4 and XFS project quotas need CONFIG_QUOTA, which many kernels (this one included) lack;
 * btrfs qgroups do not. A session directory that is the root of its own btrfs subvolume gets a
 * qgroup limit on referenced bytes, so a run that fills it gets EDQUOT like any other writer.
 * Setting the limit needs CAP_SYS_ADMIN: the broker does it for the unprivileged workers.
 *
 * The volume's reserve (off unless configured: the stack passes --disk-reserve-mb auto): every
 * session and scratch subvolume the broker limits also becomes a member of one level-1 qgroup
 * (SBX_QUOTA_PARENT, "1/4242"), limited to the volume's size less the reserve. Runs of all clients
 * together then get EDQUOT before the volume is full, and what the reserve keeps free is left for
 * the service (metadata, uploads' temp files). A member must join the group while it shares no data
 * with anything outside it: joining later, or a snapshot of a member made outside the group, makes
 * btrfs mark every qgroup of the volume inconsistent until a rescan (checked on 6.18: "qgroup
 * inherit needs a rescan"), and limits then stop holding. A fresh subvolume qualifies; a fork (a
 * snapshot) must be made with the group inherited (BTRFS_SUBVOL_QGROUP_INHERIT, which keeps the
 * accounting exact: the store's forks do, fcgi/store/scratch.c), and one that was not is left out
 * of the group rather than assigned. Subvolumes made before the reserve was turned on are not
 * members: the stack assigns them and rescans once when it mounts the volume (nginx/stack.sh,
 * stack_volume_up). */
#include <errno.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/btrfs_tree.h>

#include "internal.h"

#define BTRFS_SUBVOL_ROOT_INO 256 /* BTRFS_FIRST_FREE_OBJECTID: every subvolume's root */

static uint64_t reserve_bytes; /* 0: no reserve group (see sandbox.h) */

void sbx_quota_set_reserve(uint64_t bytes)
{
	reserve_bytes = bytes;
}

/* Create (once) and limit the volume's level-1 group, then put the subvolume at dirfd in it when
 * that keeps the accounting exact (see the top). 0 or -errno with err filled. */
static int join_parent(int dirfd, char *err, size_t errlen)
{
	struct btrfs_ioctl_get_subvol_info_args info;
	struct btrfs_ioctl_qgroup_create_args c;
	struct btrfs_ioctl_qgroup_assign_args as;
	struct btrfs_ioctl_qgroup_limit_args l;
	static const uint8_t none[BTRFS_UUID_SIZE];
	struct statfs sf;
	uint64_t total, reserve;
	int rc;

	if (fstatfs(dirfd, &sf) < 0)
		return -errno;
	total = (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize;
	reserve = reserve_bytes;
	if (reserve == SBX_QUOTA_RESERVE_AUTO)
		reserve = total / 20 < (512ull << 20) ? total / 20 : 512ull << 20;
	if (reserve >= total) {
		sbx_set_error(err, errlen,
			      "quota: the disk reserve (%llu MiB) is not below the "
			      "volume's size (%llu MiB)",
			      (unsigned long long)(reserve >> 20),
			      (unsigned long long)(total >> 20));
		return -ENOSPC;
	}
	memset(&c, 0, sizeof c);
	c.create = 1;
	c.qgroupid = SBX_QUOTA_PARENT;
	if (ioctl(dirfd, BTRFS_IOC_QGROUP_CREATE, &c) < 0 && errno != EEXIST) {
		rc = -errno;
		sbx_set_error(err, errlen, "quota: create the volume's group: %s", strerror(errno));
		return rc;
	}
	/* Set every time: the volume may have grown, or the reserve changed since. */
	memset(&l, 0, sizeof l);
	l.qgroupid = SBX_QUOTA_PARENT;
	l.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	l.lim.max_rfer = total - reserve;
	if (ioctl(dirfd, BTRFS_IOC_QGROUP_LIMIT, &l) < 0) {
		rc = -errno;
		sbx_set_error(err, errlen, "quota: limit the volume's group: %s", strerror(errno));
		return rc;
	}
	memset(&info, 0, sizeof info);
	if (ioctl(dirfd, BTRFS_IOC_GET_SUBVOL_INFO, &info) < 0) {
		rc = -errno;
		sbx_set_error(err, errlen, "quota: subvolume info: %s", strerror(errno));
		return rc;
	}
	memset(&as, 0, sizeof as);
	as.assign = 1;
	as.src = info.treeid; /* its own qgroup, 0/<subvolume id> */
	as.dst = SBX_QUOTA_PARENT;
	if (memcmp(info.parent_uuid, none, sizeof none) != 0) {
		/* A snapshot: a member already if made with the group inherited; else it stays out
		 * (see the top): assigning it now would make the volume's accounting inconsistent.
		 */
		return 0;
	}
	rc = ioctl(dirfd, BTRFS_IOC_QGROUP_ASSIGN, &as);
	if (rc < 0 && errno != EEXIST) {
		rc = -errno;
		sbx_set_error(err, errlen, "quota: join the volume's group: %s", strerror(errno));
		return rc;
	}
	return 0;
}

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
			      errno == ENOTCONN ? " (run `btrfs quota enable` on the filesystem)"
						: "");
		return rc;
	}
	return reserve_bytes ? join_parent(dirfd, err, errlen) : 0;
}
