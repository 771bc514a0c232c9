/* session.c: the session store (layout in session.h): per-client directories, metadata written
 * atomically, flock for concurrent workers, idle TTL and max lifetime with lazy and periodic
 * expiry, the per-client cap, fork, removal, scratch directories, and the /v1 session routes.
 *
 * Every worker of the pool is a separate process acting on the same directories, so the rules
 * are: a session appears by renaming a complete directory into place (RENAME_NOREPLACE), goes by
 * renaming it to a trash name before removing it, and its metadata is only rewritten under the
 * session's flock. A session dir holds nothing the sandboxed program can reach except files/,
 * which on btrfs is a subvolume with the session's quota (scratch.c: vol_make_root).
 * The metadata file itself: meta.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define SESSION_CLIENT_KEY_MAX 250
#define SESSION_OWNER_MAX 256

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

int session_new_id(const struct store_conf *conf, char *out, size_t outlen)
{
	char uuid[40];

	if (session_uuid(uuid, sizeof(uuid)) < 0)
		return -1;
	if (!conf->shard || !conf->shard[0])
		return snprintf(out, outlen, "%s", uuid) < (int)outlen ? 0 : -1;
	return snprintf(out, outlen, "%s-%s", conf->shard, uuid) < (int)outlen ? 0 : -1;
}

/* The directory name of a client: "u-name" for plain names, "h-<hex>" otherwise, so neither
 * "/" nor ".." nor a dot name can come from a client name. 0, or -1 when unusable. */
static int client_key(const char *client, char *out, size_t outlen)
{
	size_t len = client ? strlen(client) : 0;

	if (len == 0)
		return -1;
	if (session_id_valid(client, len))
		return snprintf(out, outlen, "u-%s", client) < (int)outlen ? 0 : -1;
	if (2 + 2 * len + 1 > outlen)
		return -1;
	memcpy(out, "h-", 2);
	for (size_t i = 0; i < len; i++)
		snprintf(out + 2 + 2 * i, 3, "%02x", (unsigned char)client[i]);
	return 0;
}

/* O_PATH fd of client's directory, or -errno: -EACCES (CLIENT) for an unusable client name,
 * -ENOENT (SESSION) when it does not exist and create is false. */
static int open_client(const struct store_conf *conf, const char *client, bool create,
		       struct store_err *e)
{
	char key[SESSION_CLIENT_KEY_MAX + 1];
	int top, fd;

	if (client_key(client, key, sizeof(key)) < 0)
		return store_fail(e, EACCES, STORE_WHY_CLIENT, 0);
	if ((top = session_top_fd(conf, "sessions")) < 0)
		return store_fail(e, EIO, STORE_WHY_NONE, 0);
	if (create && mkdirat(top, key, 0700) < 0 && errno != EEXIST) {
		fd = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	fd = openat(top, key, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fd = store_fail(e, errno, errno == ENOENT ? STORE_WHY_SESSION : STORE_WHY_NONE, 0);
out:
	close(top);
	return fd;
}

/* flock(op) on dirfd/name (created). Returns the lock fd, or -1. */
static int lock_at(int dirfd, const char *name, int op)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	while (flock(fd, op) < 0) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

int session_lock(const struct session *s)
{
	return lock_at(s->dir_fd, "lock", LOCK_EX);
}

bool session_gone(const struct session *s)
{
	struct stat st;

	return fstat(s->dir_fd, &st) == 0 && st.st_nlink == 0;
}

/* A session_lock that failed: ENOENT means a concurrent delete removed the directory under us,
 * so the session is gone (404); anything else is the store's fault. */
int session_lock_fail(struct store_err *e)
{
	int err = errno;

	if (err == ENOENT)
		return store_fail(e, ENOENT, STORE_WHY_SESSION, 0);
	return store_fail(e, EIO, STORE_WHY_NONE, 0);
}

void session_unlock(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd); /* closing the only fd releases the flock */
}

/* conf->runs_end, when there is one. */
static void runs_end(const struct store_conf *conf, const char *owner, const char *id)
{
	if (conf->runs_end)
		conf->runs_end(conf->runs_end_ctx, owner, id);
}

static int64_t expiry(const struct store_conf *conf, int64_t created, int64_t last_used)
{
	int64_t e = INT64_MAX;

	if (conf->ttl_s)
		e = last_used + (int64_t)conf->ttl_s;
	if (conf->max_lifetime_s && created + (int64_t)conf->max_lifetime_s < e)
		e = created + (int64_t)conf->max_lifetime_s;
	return e;
}

/* Read dir_fd/meta.json into s's times (expires_at from the current TTLs) and the owner. */
static int meta_read(int dir_fd, struct session *s, char *owner, size_t ownerlen)
{
	if (store_meta_read(dir_fd, &s->created_at, &s->last_used_at, owner, ownerlen) < 0)
		return -1;
	s->expires_at = expiry(s->conf, s->created_at, s->last_used_at);
	return 0;
}

static int meta_write(int dir_fd, const struct session *s, const char *owner)
{
	return store_meta_write(dir_fd, owner, s->created_at, s->last_used_at, s->expires_at);
}

/* Build a complete session directory under a hidden name in client_fd, ready to be renamed into
 * place; with_root makes its files/ too (a fork makes it later, from its source). tmp receives
 * the name; s receives the times. 0, or -errno with e filled (nothing left behind). */
static int session_build(int client_fd, const struct store_conf *conf, const char *owner,
			 bool with_root, struct session *s, char *tmp, size_t tmplen,
			 struct store_err *e)
{
	bool copied;
	int dfd = -1, lfd = -1, rc;

	fs_temp_name(tmp, tmplen, ".new-");
	if (mkdirat(client_fd, tmp, 0700) < 0)
		return store_fail(e, errno, STORE_WHY_NONE, 0);
	dfd = openat(client_fd, tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0)
		lfd = openat(dfd, "lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	s->conf = conf;
	s->created_at = s->last_used_at = now_s();
	s->expires_at = expiry(conf, s->created_at, s->last_used_at);
	if ((rc = meta_write(dfd, s, owner)) < 0) {
		rc = store_fail(e, rc, STORE_WHY_NONE, 0);
		goto out;
	}
	rc = with_root ? vol_make_root(conf, dfd, "files", -1, &copied, e) : 0;
out:
	if (lfd >= 0)
		close(lfd);
	if (dfd >= 0)
		close(dfd);
	if (rc < 0)
		(void)vol_rm_tree(client_fd, tmp);
	return rc;
}

/* Remove session `name` of client_fd if it has expired (or its metadata is unreadable and it is
 * older than SESSION_STALE_S). Skips a session whose lock is held right now: it is in use.
 * Returns 1 when removed, 0 when it is alive (or busy). */
static int expire_one(const struct store_conf *conf, int client_fd, const char *name, int64_t now)
{
	struct session s = {.conf = conf};
	char owner[SESSION_OWNER_MAX] = "", trash[80];
	struct stat st;
	int dfd, lfd = -1, gone = 0;

	dfd = openat(client_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	if ((lfd = lock_at(dfd, "lock", LOCK_EX | LOCK_NB)) < 0)
		goto out;
	if (meta_read(dfd, &s, owner, sizeof(owner)) == 0) {
		gone = s.expires_at <= now;
	} else {
		owner[0] = '\0'; /* unknown: its runs, if any, end at their own limits */
		gone = fstat(dfd, &st) == 0 && st.st_mtime + SESSION_STALE_S < now;
	}
	if (gone) {
		fs_temp_name(trash, sizeof(trash), ".trash-");
		gone = renameat(client_fd, name, client_fd, trash) == 0;
	}
	session_unlock(lfd);
	if (gone) {
		store_ctx_end_all(conf, dfd);
		if (owner[0])
			runs_end(conf, owner, name);
		(void)vol_rm_tree(client_fd, trash);
	}
out:
	close(dfd);
	return gone;
}

/* Live sessions of a client, removing expired ones on the way (so the cap counts live ones). */
static uint32_t count_live(const struct store_conf *conf, int client_fd)
{
	int fd = openat(client_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int64_t now = now_s();
	uint32_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !session_id_valid(e->d_name, strlen(e->d_name)))
			continue;
		if (!expire_one(conf, client_fd, e->d_name, now))
			n++;
	}
	closedir(d);
	return n;
}

/* The most sessions one client may hold: sessions_per_client, and no more than its share of the
 * volume can hold at full quota. Each session's quota holds inside runs, so this bounds what one
 * client can take of the disk every client shares (issue 13: two clients filled the volume with
 * fallocate in seconds). 0: no cap. */
static uint32_t session_cap(const struct store_conf *conf)
{
	uint64_t total = 0, fit;
	uint32_t cap = conf->sessions_per_client;

	if (!conf->client_share_pct || !conf->quota_bytes ||
	    store_disk_space(conf, NULL, &total) < 0 || !total)
		return cap;
	fit = total / 100 * conf->client_share_pct / conf->quota_bytes;
	if (fit < 1)
		fit = 1;
	return !cap || fit < cap ? (uint32_t)(fit > UINT32_MAX ? UINT32_MAX : fit) : cap;
}

/* -EUSERS (SESSIONS) when the client (client_fd, whose .lock the caller holds) is at its cap. */
static int check_cap(const struct store_conf *conf, int client_fd, struct store_err *e)
{
	uint32_t cap = session_cap(conf);

	if (!cap || count_live(conf, client_fd) < cap)
		return 0;
	if (e)
		e->limit = cap;
	return store_fail(e, EUSERS, STORE_WHY_SESSIONS, 0);
}

/* Create session `id` for client in client_fd. 0, -EEXIST when it exists already (maybe made by
 * a concurrent worker; e untouched), or -errno with e filled. */
static int session_create_named(const struct store_conf *conf, const char *client, int client_fd,
				const char *id, struct session *out, struct store_err *e)
{
	char tmp[64];
	int clock, rc;

	if ((rc = store_reserve_check(conf, 0, e)) < 0)
		return rc;
	if ((clock = lock_at(client_fd, ".lock", LOCK_EX)) < 0)
		return store_fail(e, errno, STORE_WHY_NONE, 0);
	if ((rc = check_cap(conf, client_fd, e)) < 0)
		goto out;
	if ((rc = session_build(client_fd, conf, client, true, out, tmp, sizeof(tmp), e)) < 0)
		goto out;
	if (renameat2(client_fd, tmp, client_fd, id, RENAME_NOREPLACE) < 0) {
		rc = errno == EEXIST || errno == ENOTEMPTY
			 ? -EEXIST
			 : store_fail(e, errno, STORE_WHY_NONE, 0);
		(void)vol_rm_tree(client_fd, tmp);
		goto out;
	}
	rc = 0;
out:
	session_unlock(clock);
	return rc;
}

void session_close(struct session *s)
{
	if (!s)
		return;
	if (s->client_fd >= 0)
		close(s->client_fd);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s);
}

/* Lock s (opened in s->dir_fd) and check it is still client's, alive, in place; touch it. 1 when
 * usable, 0 when gone (deleted or expired meanwhile: removed if expired), -1 when unlockable. */
static int session_touch(struct session *s, const char *client)
{
	char owner[SESSION_OWNER_MAX], trash[80];
	struct stat a, b;
	int lfd = session_lock(s);

	if (lfd < 0)
		return errno == ENOENT ? 0 : -1; /* removed by a concurrent delete: gone */
	/* Deleted (renamed to trash) between our open and our lock? Then it is gone. */
	if (meta_read(s->dir_fd, s, owner, sizeof(owner)) < 0 || strcmp(owner, client) ||
	    fstatat(s->client_fd, s->id, &a, AT_SYMLINK_NOFOLLOW) < 0 || fstat(s->dir_fd, &b) < 0 ||
	    a.st_ino != b.st_ino) {
		session_unlock(lfd);
		return 0;
	}
	if (s->expires_at <= now_s()) {
		bool moved;

		fs_temp_name(trash, sizeof(trash), ".trash-");
		moved = renameat(s->client_fd, s->id, s->client_fd, trash) == 0;
		session_unlock(lfd);
		if (moved) {
			store_ctx_end_all(s->conf, s->dir_fd);
			runs_end(s->conf, owner, s->id);
			(void)vol_rm_tree(s->client_fd, trash);
		}
		return 0;
	}
	if (s->last_used_at != now_s()) {
		s->last_used_at = now_s();
		s->expires_at = expiry(s->conf, s->created_at, s->last_used_at);
		/* A touch that fails to land only shortens the TTL: not worth an error. */
		(void)meta_write(s->dir_fd, s, owner);
	}
	session_unlock(lfd);
	return 1;
}

int session_open(const struct store_conf *conf, const char *client, const char *id, bool create,
		 struct session **out, struct store_err *e)
{
	struct session *s = calloc(1, sizeof(*s));
	size_t idlen = id ? strlen(id) : 0;
	struct stat b;
	int rc = store_fail(e, ENOENT, STORE_WHY_SESSION, 0);

	*out = NULL;
	if (!s)
		return store_fail(e, ENOMEM, STORE_WHY_NONE, 0);
	s->conf = conf;
	s->client_fd = s->dir_fd = s->root_fd = -1;
	if (!session_id_valid(id, idlen)) {
		if (create)
			rc = store_fail(e, EINVAL, STORE_WHY_ID, 0);
		goto out;
	}
	memcpy(s->id, id, idlen + 1);
	session_sweep(conf);
	if ((s->client_fd = open_client(conf, client, create, e)) < 0) {
		rc = s->client_fd;
		goto out;
	}
	for (int attempt = 0; attempt < 4; attempt++) {
		int t;

		if (s->dir_fd >= 0)
			close(s->dir_fd);
		s->dir_fd = openat(s->client_fd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s->dir_fd < 0) {
			if (errno != ENOENT || !create)
				break;
			t = session_create_named(conf, client, s->client_fd, id, s, e);
			if (t < 0 && t != -EEXIST) {
				rc = t;
				goto out;
			}
			continue; /* created (or raced): open it like any other */
		}
		if ((t = session_touch(s, client)) < 0)
			break;
		if (t == 0) {
			if (!create)
				break;
			continue;
		}
		s->root_fd =
		    openat(s->dir_fd, "files", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s->root_fd < 0)
			break;
		/* A run may have chmod'ed /work to 000: the directory is ours on disk, take it back
		 * so the file API keeps working. */
		if (fstat(s->root_fd, &b) == 0 && (b.st_mode & 0700) != 0700 &&
		    fchmodat(s->dir_fd, "files", (b.st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW) <
			0)
			errno = 0; /* the file calls that follow report what still fails */
		*out = s;
		return 0;
	}
	rc = store_fail(e, ENOENT, STORE_WHY_SESSION, 0);
out:
	session_close(s);
	return rc;
}

uint64_t session_quota_left(const struct session *s)
{
	uint64_t used = 0, quota = s->conf->quota_bytes;

	if (!quota || vol_is_subvol(s->root_fd)) /* the kernel holds the quota in runs */
		return UINT64_MAX;
	if (fs_usage(s->root_fd, &used, NULL) < 0)
		return 0;
	return used >= quota ? 0 : quota - used;
}

int session_remove(struct session *s, struct store_err *e)
{
	char trash[80], owner[SESSION_OWNER_MAX] = "";
	int64_t times[2];
	int lfd = session_lock(s), err;

	if (lfd < 0)
		return session_lock_fail(e);
	fs_temp_name(trash, sizeof(trash), ".trash-");
	if (store_meta_read(s->dir_fd, &times[0], &times[1], owner, sizeof(owner)) < 0)
		owner[0] = '\0';
	/* Renamed under the lock: a concurrent session_open sees it gone. A run in progress keeps
	 * its mount of files/ and finishes on the detached tree. */
	if (renameat(s->client_fd, s->id, s->client_fd, trash) < 0) {
		err = errno;
		session_unlock(lfd);
		return store_fail(e, err, err == ENOENT ? STORE_WHY_SESSION : STORE_WHY_NONE, 0);
	}
	session_unlock(lfd);
	/* Its contexts end first: a busy cell is killed, so nothing writes into the tree. */
	store_ctx_end_all(s->conf, s->dir_fd);
	if (owner[0])
		runs_end(s->conf, owner, s->id);
	/* Once renamed the session is gone for its client; if removal stops half-way (a run still
	 * writing into it), the sweep finishes it. */
	(void)vol_rm_tree(s->client_fd, trash);
	return 0;
}

/* The files of src into the new session directory tmp (of src's client): a btrfs snapshot, or a
 * copy within the quota. Under src's lock. 0 or -errno. */
static int fork_files(struct session *src, const char *tmp, struct store_err *e)
{
	const struct store_conf *conf = src->conf;
	uint64_t budget = conf->quota_bytes ? conf->quota_bytes : UINT64_MAX, used = 0;
	bool copied = false;
	int from = -1, dfd = -1, to = -1, rc;

	from = fs_open(src->root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
	dfd = openat(src->client_fd, tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (from < 0 || dfd < 0) {
		rc = store_fail(e, from < 0 ? -from : errno, STORE_WHY_NONE, 0);
		goto out;
	}
	/* Checked first: a snapshot is free, but a session over its quota is never copied. */
	rc = conf->quota_bytes ? fs_usage(src->root_fd, &used, NULL) : 0;
	if (rc < 0 || used > budget) {
		rc = store_fail(e, rc < 0 ? rc : -EDQUOT, STORE_WHY_NONE, 0);
		goto out;
	}
	if ((rc = store_reserve_check(conf, used, e)) < 0)
		goto out;
	if ((rc = vol_make_root(conf, dfd, "files", from, &copied, e)) < 0 || copied)
		goto out;
	if ((to = openat(dfd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	if ((rc = fs_copy_tree(from, to, &budget)) < 0)
		rc = store_fail(e, rc, rc == -ELOOP ? STORE_WHY_DEPTH : STORE_WHY_NONE, 0);
out:
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

int session_fork(struct session *src, const char *client, char *new_id, size_t idlen,
		 struct store_err *e)
{
	const struct store_conf *conf = src->conf;
	struct session n = {.conf = conf};
	char tmp[64] = "";
	int slock = -1, clock = -1, rc;

	if (session_new_id(conf, new_id, idlen) < 0)
		return store_fail(e, EAGAIN, STORE_WHY_NONE, 0);
	if ((rc = session_build(src->client_fd, conf, client, false, &n, tmp, sizeof(tmp), e)) <
	    0) {
		tmp[0] = '\0';
		goto out;
	}
	/* The source lock holds back API writes (they rename under it): the copy is a snapshot of
	 * what the API wrote. On btrfs it is a real snapshot, consistent even while a run writes;
	 * elsewhere a run writing at the same time is not held back. */
	if ((slock = session_lock(src)) < 0) {
		rc = session_lock_fail(e);
		goto out;
	}
	if ((rc = fork_files(src, tmp, e)) < 0)
		goto out;
	session_unlock(slock);
	slock = -1;
	if ((clock = lock_at(src->client_fd, ".lock", LOCK_EX)) < 0) {
		rc = store_fail(e, EIO, STORE_WHY_NONE, 0);
		goto out;
	}
	if ((rc = check_cap(conf, src->client_fd, e)) < 0)
		goto out;
	if (renameat2(src->client_fd, tmp, src->client_fd, new_id, RENAME_NOREPLACE) < 0) {
		rc = store_fail(e, errno, STORE_WHY_NONE, 0);
		goto out;
	}
	tmp[0] = '\0';
	rc = 0;
out:
	session_unlock(slock);
	session_unlock(clock);
	if (tmp[0])
		(void)vol_rm_tree(src->client_fd, tmp);
	return rc;
}

/* Expired sessions and leftovers of one client directory. */
static void sweep_client(const struct store_conf *conf, int client_fd, int64_t now)
{
	int fd = openat(client_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!strncmp(e->d_name, ".trash-", 7)) {
			(void)vol_rm_tree(client_fd, e->d_name);
		} else if (!strncmp(e->d_name, ".new-", 5)) {
			if (fstatat(client_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_mtime + SESSION_STALE_S < now)
				(void)vol_rm_tree(client_fd, e->d_name);
		} else if (session_id_valid(e->d_name, strlen(e->d_name))) {
			(void)expire_one(conf, client_fd, e->d_name, now);
		}
	}
	closedir(d);
}

void session_sweep(const struct store_conf *conf)
{
	int top = session_top_fd(conf, "sessions"), lfd = -1, fd = -1;
	int64_t now = now_s();
	struct stat st;
	DIR *d = NULL;
	struct dirent *e;

	if (top < 0)
		return;
	/* Non-blocking: when another worker is sweeping, this one has nothing to do. The lock
	 * file's mtime is the time of the last sweep; an empty file means never. */
	lfd = openat(top, ".sweep", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0 || fstat(lfd, &st) < 0)
		goto out;
	if (st.st_size > 0 && st.st_mtime + SESSION_SWEEP_INTERVAL_S > now && st.st_mtime <= now)
		goto out;
	if (pwrite(lfd, "1", 1, 0) != 1 || futimens(lfd, NULL) < 0)
		goto out;
	fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd)))
		goto out;
	fd = -1;
	while ((e = readdir(d))) {
		int cfd;

		if (e->d_name[0] == '.')
			continue;
		cfd = openat(top, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd >= 0) {
			sweep_client(conf, cfd, now);
			close(cfd);
		}
	}
	scratch_sweep(conf, now);
out:
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	close(top);
}

int session_create(const struct store_conf *conf, const char *client, struct session *out,
		   struct store_err *e)
{
	int cfd, rc = -EEXIST;

	session_sweep(conf);
	if ((cfd = open_client(conf, client, true, e)) < 0)
		return cfd;
	/* A UUID collision is astronomically unlikely, but costs nothing to survive. */
	for (int i = 0; i < 4 && rc == -EEXIST; i++) {
		if (session_new_id(conf, out->id, sizeof(out->id)) < 0)
			break;
		rc = session_create_named(conf, client, cfd, out->id, out, e);
	}
	close(cfd);
	if (rc == -EEXIST || rc == -1)
		rc = store_fail(e, EAGAIN, STORE_WHY_NONE, 0);
	return rc;
}

static int by_created(const void *a, const void *b)
{
	const struct session_info *x = a, *y = b;

	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	return strcmp(x->id, y->id);
}

int session_list(const struct store_conf *conf, const char *client, struct session_info **out,
		 size_t *n, struct store_err *e)
{
	struct session_info *v = NULL;
	size_t cap = 0;
	int cfd = open_client(conf, client, false, e), fd = -1;
	int64_t now = now_s();
	DIR *d = NULL;
	struct dirent *de;

	*out = NULL;
	*n = 0;
	if (cfd == -ENOENT)
		return 0; /* a client that never made a session has none */
	if (cfd < 0)
		return cfd;
	if ((fd = openat(cfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
	    (d = fdopendir(fd)) != NULL)
		fd = -1;
	while (d && (de = readdir(d)) && *n < SESSION_LIST_MAX) {
		struct session s = {.conf = conf};
		char owner[SESSION_OWNER_MAX];
		int dfd;

		if (de->d_name[0] == '.' || !session_id_valid(de->d_name, strlen(de->d_name)))
			continue;
		dfd = openat(cfd, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (meta_read(dfd, &s, owner, sizeof(owner)) == 0 && !strcmp(owner, client) &&
		    s.expires_at > now) {
			if (*n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct session_info *nv = realloc(v, ncap * sizeof(*v));

				if (!nv) {
					close(dfd);
					break;
				}
				v = nv;
				cap = ncap;
			}
			snprintf(v[*n].id, sizeof(v[*n].id), "%s", de->d_name);
			v[*n].created_at = s.created_at;
			v[*n].last_used_at = s.last_used_at;
			v[*n].expires_at = s.expires_at;
			(*n)++;
		}
		close(dfd);
	}
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
	close(cfd);
	if (*n)
		qsort(v, *n, sizeof(*v), by_created);
	*out = v;
	return 0;
}
