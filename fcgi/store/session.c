/* session.c: the session store (layout in session.h): per-client directories, metadata written
 * atomically, flock for concurrent workers, idle TTL and max lifetime with lazy and periodic
 * expiry, the per-client cap, fork, removal, scratch directories, and the /v1 session routes.
 *
 * Every worker of the pool is a separate process acting on the same directories, so the rules
 * are: a session appears by renaming a complete directory into place (RENAME_NOREPLACE), goes by
 * renaming it to a trash name before removing it, and its metadata is only rewritten under the
 * session's flock. A session dir holds nothing the sandboxed program can reach except files/,
 * which on btrfs is a subvolume with the session's quota (scratch.c: vol_make_root). */
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

#define SESSION_META_MAX 4096
#define SESSION_CLIENT_KEY_MAX 250
#define SESSION_LIST_MAX 10000

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

void session_iso_time(int64_t t, char *out, size_t outlen)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "1970-01-01T00:00:00Z");
}

void session_json_time(struct json_object *o, const char *key, int64_t t)
{
	char buf[32];

	session_iso_time(t, buf, sizeof(buf));
	json_object_object_add(o, key, json_object_new_string(buf));
}

bool session_id_valid(const char *id, size_t len)
{
	if (!id || len == 0 || len > SESSION_ID_MAX || strlen(id) != len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* A random (version 4) UUID into out (at least 37 bytes). 0, or -1 when getrandom fails. */
int session_uuid(char *out, size_t outlen)
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, outlen,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	return 0;
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

/* O_PATH fd of state_dir/<sub>, made (0700) if missing. Returns the fd or -1. */
int session_top_fd(const struct config *cfg, const char *sub)
{
	char path[4096];

	if (!cfg || !cfg->state_dir ||
	    snprintf(path, sizeof(path), "%s/%s", cfg->state_dir, sub) >= (int)sizeof(path))
		return -1;
	(void)mkdir(path, 0700);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* O_PATH fd of the caller's client directory. -1 with resp filled, or -2 when it does not exist
 * and create is false (the caller decides what that means). */
static int open_client(const struct api_req *req, bool create, struct api_resp *resp)
{
	char key[SESSION_CLIENT_KEY_MAX + 1];
	int top = -1, fd = -1;

	if (client_key(req->client, key, sizeof(key)) < 0) {
		api_error(resp, 401, "unauthorized", NULL,
			  "This route needs an authenticated client.");
		return -1;
	}
	if ((top = session_top_fd(req->cfg, "sessions")) < 0) {
		api_error(resp, 500, "internal_error", NULL, "The session store is not available.");
		return -1;
	}
	if (create && mkdirat(top, key, 0700) < 0 && errno != EEXIST) {
		api_error(resp, 500, "internal_error", NULL, "The session store is not writable.");
		goto out;
	}
	fd = openat(top, key, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && !create) {
			fd = -2;
		} else {
			api_error(resp, 500, "internal_error", NULL,
				  "The session store is not available.");
			fd = -1;
		}
	}
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

void session_unlock(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd); /* closing the only fd releases the flock */
}

static int64_t expiry(const struct config *cfg, int64_t created, int64_t last_used)
{
	int64_t e = INT64_MAX;

	if (cfg->session_ttl_s)
		e = last_used + (int64_t)cfg->session_ttl_s;
	if (cfg->session_max_lifetime_s && created + (int64_t)cfg->session_max_lifetime_s < e)
		e = created + (int64_t)cfg->session_max_lifetime_s;
	return e;
}

static int64_t meta_int(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

/* Read dir_fd/meta.json into s's times, and the owner into owner. 0 or -1. */
static int meta_read(int dir_fd, struct session *s, char *owner, size_t ownerlen)
{
	char buf[SESSION_META_MAX + 1];
	struct json_object *o = NULL, *v = NULL;
	ssize_t n;
	int fd = openat(dir_fd, "meta.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc = -1;

	if (fd < 0)
		return -1;
	n = read(fd, buf, SESSION_META_MAX);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!(o = json_tokener_parse(buf)) || !json_object_is_type(o, json_type_object))
		goto out;
	s->created_at = meta_int(o, "created_at");
	s->last_used_at = meta_int(o, "last_used_at");
	if (s->created_at < 0 || s->last_used_at < 0 ||
	    !json_object_object_get_ex(o, "owner", &v) || !json_object_is_type(v, json_type_string))
		goto out;
	snprintf(owner, ownerlen, "%s", json_object_get_string(v));
	s->expires_at = expiry(s->cfg, s->created_at, s->last_used_at);
	rc = 0;
out:
	json_object_put(o);
	return rc;
}

/* Replace dir_fd/meta.json atomically (temp + rename). 0 or -errno. */
static int meta_write(int dir_fd, const struct session *s, const char *owner)
{
	struct json_object *o = json_object_new_object();
	char tmp[64];
	const char *text;
	size_t len;
	int fd = -1, rc = 0;

	fs_temp_name(tmp, sizeof(tmp), ".meta-");
	json_object_object_add(o, "owner", json_object_new_string(owner));
	json_object_object_add(o, "created_at", json_object_new_int64(s->created_at));
	json_object_object_add(o, "last_used_at", json_object_new_int64(s->last_used_at));
	json_object_object_add(o, "expires_at", json_object_new_int64(s->expires_at));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	len = strlen(text);
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || close(fd) < 0) {
		rc = errno ? -errno : -EIO;
		if (fd >= 0)
			(void)unlinkat(dir_fd, tmp, 0);
		fd = -1;
		goto out;
	}
	if (renameat(dir_fd, tmp, dir_fd, "meta.json") < 0) {
		rc = -errno;
		(void)unlinkat(dir_fd, tmp, 0);
	}
out:
	json_object_put(o);
	return rc;
}

/* Build a complete session directory under a hidden name in client_fd, ready to be renamed into
 * place; with_root makes its files/ too (a fork makes it later, from its source). tmp receives
 * the name; s receives the times. 0, or -1 with resp filled (nothing left behind). */
static int session_build(int client_fd, const struct config *cfg, const char *owner,
			 bool with_root, struct session *s, char *tmp, size_t tmplen,
			 struct api_resp *resp)
{
	bool copied;
	int dfd = -1, lfd = -1, rc = -1, e;

	fs_temp_name(tmp, tmplen, ".new-");
	if (mkdirat(client_fd, tmp, 0700) < 0) {
		fs_error(resp, errno, NULL, "");
		return -1;
	}
	dfd = openat(client_fd, tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0)
		lfd = openat(dfd, "lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0) {
		fs_error(resp, errno, NULL, "");
		goto out;
	}
	s->cfg = cfg;
	s->created_at = s->last_used_at = now_s();
	s->expires_at = expiry(cfg, s->created_at, s->last_used_at);
	if ((e = meta_write(dfd, s, owner)) < 0) {
		fs_error(resp, -e, NULL, "");
		goto out;
	}
	if (with_root && vol_make_root(cfg, dfd, "files", -1, &copied, resp) < 0)
		goto out;
	rc = 0;
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
static int expire_one(const struct config *cfg, int client_fd, const char *name, int64_t now)
{
	struct session s = {.cfg = cfg};
	char owner[256], trash[80];
	struct stat st;
	int dfd, lfd = -1, gone = 0;

	dfd = openat(client_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	if ((lfd = lock_at(dfd, "lock", LOCK_EX | LOCK_NB)) < 0)
		goto out;
	if (meta_read(dfd, &s, owner, sizeof(owner)) == 0)
		gone = s.expires_at <= now;
	else
		gone = fstat(dfd, &st) == 0 && st.st_mtime + SESSION_STALE_S < now;
	if (gone) {
		fs_temp_name(trash, sizeof(trash), ".trash-");
		gone = renameat(client_fd, name, client_fd, trash) == 0;
	}
	session_unlock(lfd);
	if (gone)
		(void)vol_rm_tree(client_fd, trash);
out:
	close(dfd);
	return gone;
}

/* Live sessions of a client, removing expired ones on the way (so the cap counts live ones). */
static uint32_t count_live(const struct config *cfg, int client_fd)
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
		if (!expire_one(cfg, client_fd, e->d_name, now))
			n++;
	}
	closedir(d);
	return n;
}

/* Create session `id` for the caller in client_fd. 0, -EEXIST when it exists already (maybe made
 * by a concurrent worker), or -1 with resp filled. */
static int session_create_named(const struct api_req *req, int client_fd, const char *id,
				struct session *out, struct api_resp *resp)
{
	const struct config *cfg = req->cfg;
	char tmp[64];
	int clock, rc = -1;

	if ((clock = lock_at(client_fd, ".lock", LOCK_EX)) < 0) {
		api_error(resp, 500, "internal_error", NULL, "The session store is not writable.");
		return -1;
	}
	if (cfg->sessions_per_client && count_live(cfg, client_fd) >= cfg->sessions_per_client) {
		api_error(resp, 409, "too_many_sessions", NULL,
			  "This client already has %u sessions, the maximum; delete one first.",
			  cfg->sessions_per_client);
		goto out;
	}
	if (session_build(client_fd, cfg, req->client, true, out, tmp, sizeof(tmp), resp) < 0)
		goto out;
	if (renameat2(client_fd, tmp, client_fd, id, RENAME_NOREPLACE) < 0) {
		rc = errno == EEXIST || errno == ENOTEMPTY ? -EEXIST : -1;
		if (rc == -1)
			fs_error(resp, errno, NULL, "");
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

static void not_found(struct api_resp *resp, const char *id)
{
	api_error(resp, 404, "session_not_found", NULL,
		  "No session \"%.64s\" (it may have expired or been deleted).", id);
}

/* session_open / session_open_or_create. Returns a session the caller closes with
 * session_close(), or NULL with resp filled (404 session_not_found, 400 invalid_id when create,
 * 401, 409 too_many_sessions, 500). */
static struct session *session_get(const struct api_req *req, const char *id, bool create,
				   struct api_resp *resp)
{
	struct session *s = calloc(1, sizeof(*s));
	char owner[256], trash[80];
	size_t idlen = id ? strlen(id) : 0;
	bool ok = false;

	if (!s) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory.");
		return NULL;
	}
	s->cfg = req->cfg;
	s->client_fd = s->dir_fd = s->root_fd = -1;
	if (!session_id_valid(id, idlen)) {
		if (create)
			api_error(resp, 400, "invalid_id", "id",
				  "A session id is 1 to 64 of A-Z, a-z, 0-9, \"_\" and \"-\".");
		else
			not_found(resp, id ? id : "");
		goto out;
	}
	memcpy(s->id, id, idlen + 1);
	session_sweep(req->cfg);
	s->client_fd = open_client(req, create, resp);
	if (s->client_fd == -2)
		not_found(resp, id);
	if (s->client_fd < 0)
		goto out;
	for (int attempt = 0; attempt < 4; attempt++) {
		struct stat a, b;
		int lfd, e;

		if (s->dir_fd >= 0)
			close(s->dir_fd);
		s->dir_fd = openat(s->client_fd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s->dir_fd < 0) {
			if (errno != ENOENT || !create)
				break;
			e = session_create_named(req, s->client_fd, id, s, resp);
			if (e == -1)
				goto out;
			continue; /* created (or raced): open it like any other */
		}
		if ((lfd = session_lock(s)) < 0)
			break;
		/* Deleted (renamed to trash) between our open and our lock? Then it is gone. */
		if (meta_read(s->dir_fd, s, owner, sizeof(owner)) < 0 ||
		    strcmp(owner, req->client) ||
		    fstatat(s->client_fd, id, &a, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstat(s->dir_fd, &b) < 0 || a.st_ino != b.st_ino) {
			session_unlock(lfd);
			continue;
		}
		if (s->expires_at <= now_s()) {
			bool moved;

			fs_temp_name(trash, sizeof(trash), ".trash-");
			moved = renameat(s->client_fd, id, s->client_fd, trash) == 0;
			session_unlock(lfd);
			if (moved)
				(void)vol_rm_tree(s->client_fd, trash);
			if (!create)
				break;
			continue;
		}
		if (s->last_used_at != now_s()) {
			s->last_used_at = now_s();
			s->expires_at = expiry(s->cfg, s->created_at, s->last_used_at);
			/* A touch that fails to land only shortens the TTL: not worth an error. */
			(void)meta_write(s->dir_fd, s, owner);
		}
		session_unlock(lfd);
		s->root_fd =
		    openat(s->dir_fd, "files", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		ok = s->root_fd >= 0;
		/* A run may have chmod'ed /work to 000: the directory is ours on disk, take it back
		 * so the file API keeps working. */
		if (ok && fstat(s->root_fd, &b) == 0 && (b.st_mode & 0700) != 0700 &&
		    fchmodat(s->dir_fd, "files", (b.st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW) <
			0)
			errno = 0; /* the file calls that follow report what still fails */
		break;
	}
	if (!ok && !resp->status)
		not_found(resp, id);
out:
	if (!ok) {
		session_close(s);
		s = NULL;
	}
	return s;
}

struct session *session_open(const struct api_req *req, const char *id, struct api_resp *resp)
{
	return session_get(req, id, false, resp);
}

struct session *session_open_or_create(const struct api_req *req, const char *id,
				       struct api_resp *resp)
{
	return session_get(req, id, true, resp);
}

int session_root_fd(const struct session *s)
{
	return s->root_fd;
}

const char *session_id(const struct session *s)
{
	return s->id;
}

uint64_t session_quota_left(const struct session *s)
{
	uint64_t used = 0, quota = s->cfg->session_quota_bytes;

	if (!quota || vol_is_subvol(s->root_fd)) /* the kernel holds the quota in runs */
		return UINT64_MAX;
	if (fs_usage(s->root_fd, &used, NULL) < 0)
		return 0;
	return used >= quota ? 0 : quota - used;
}

int session_remove(struct session *s, struct api_resp *resp)
{
	char trash[80];
	int lfd = session_lock(s);

	fs_temp_name(trash, sizeof(trash), ".trash-");
	/* Renamed under the lock: a concurrent session_open sees it gone. A run in progress keeps
	 * its mount of files/ and finishes on the detached tree. */
	if (lfd < 0 || renameat(s->client_fd, s->id, s->client_fd, trash) < 0) {
		if (errno == ENOENT)
			not_found(resp, s->id);
		else
			fs_error(resp, errno, NULL, "");
		session_unlock(lfd);
		return -1;
	}
	session_unlock(lfd);
	/* Once renamed the session is gone for its client; if removal stops half-way (a run still
	 * writing into it), the sweep finishes it. */
	(void)vol_rm_tree(s->client_fd, trash);
	return 0;
}

int session_fork(const struct api_req *req, struct session *src, char *new_id, size_t idlen,
		 struct api_resp *resp)
{
	const struct config *cfg = req->cfg;
	struct session n = {.cfg = cfg};
	uint64_t budget = cfg->session_quota_bytes ? cfg->session_quota_bytes : UINT64_MAX;
	uint64_t used = 0;
	char tmp[64] = "";
	bool copied = false;
	int slock = -1, clock = -1, from = -1, dfd = -1, to = -1, rc = -1, e;

	if (session_new_id(cfg, new_id, idlen) < 0) {
		api_error(resp, 500, "internal_error", NULL, "No randomness for a session id.");
		goto out;
	}
	if (session_build(src->client_fd, cfg, req->client, false, &n, tmp, sizeof(tmp), resp) <
	    0) {
		tmp[0] = '\0';
		goto out;
	}
	/* The source lock holds back API writes (they rename under it): the copy is a snapshot of
	 * what the API wrote. On btrfs it is a real snapshot, consistent even while a run writes;
	 * elsewhere a run writing at the same time is not held back. */
	if ((slock = session_lock(src)) < 0) {
		fs_error(resp, EIO, NULL, "");
		goto out;
	}
	from = fs_open(src->root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
	dfd = openat(src->client_fd, tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (from < 0 || dfd < 0) {
		fs_error(resp, from < 0 ? -from : errno, NULL, "");
		goto out;
	}
	/* Checked first: a snapshot is free, but a session over its quota is never copied. */
	e = cfg->session_quota_bytes ? fs_usage(src->root_fd, &used, NULL) : 0;
	if (e < 0 || used > budget) {
		fs_error(resp, e < 0 ? -e : EDQUOT, NULL, "");
		goto out;
	}
	if (vol_make_root(cfg, dfd, "files", from, &copied, resp) < 0)
		goto out;
	if (!copied &&
	    (to = openat(dfd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		fs_error(resp, errno, NULL, "");
		goto out;
	}
	if (!copied && (e = fs_copy_tree(from, to, &budget)) < 0) {
		if (e == -ELOOP)
			api_error(resp, 409, "tree_too_deep", NULL,
				  "The session's directory tree is deeper than %d levels.",
				  SESSION_WALK_MAX_DEPTH);
		else
			fs_error(resp, -e, NULL, "");
		goto out;
	}
	session_unlock(slock);
	slock = -1;
	if ((clock = lock_at(src->client_fd, ".lock", LOCK_EX)) < 0) {
		fs_error(resp, EIO, NULL, "");
		goto out;
	}
	if (cfg->sessions_per_client &&
	    count_live(cfg, src->client_fd) >= cfg->sessions_per_client) {
		api_error(resp, 409, "too_many_sessions", NULL,
			  "This client already has %u sessions, the maximum; delete one first.",
			  cfg->sessions_per_client);
		goto out;
	}
	if (renameat2(src->client_fd, tmp, src->client_fd, new_id, RENAME_NOREPLACE) < 0) {
		fs_error(resp, errno, NULL, "");
		goto out;
	}
	tmp[0] = '\0';
	rc = 0;
out:
	session_unlock(slock);
	session_unlock(clock);
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	if (dfd >= 0)
		close(dfd);
	if (tmp[0])
		(void)vol_rm_tree(src->client_fd, tmp);
	return rc;
}

/* Expired sessions and leftovers of one client directory. */
static void sweep_client(const struct config *cfg, int client_fd, int64_t now)
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
			(void)expire_one(cfg, client_fd, e->d_name, now);
		}
	}
	closedir(d);
}

void session_sweep(const struct config *cfg)
{
	int top = session_top_fd(cfg, "sessions"), lfd = -1, fd = -1;
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
			sweep_client(cfg, cfd, now);
			close(cfd);
		}
	}
	scratch_sweep(cfg, now);
out:
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	close(top);
}

int session_create(const struct api_req *req, struct session *out, char *id, size_t idlen,
		   struct api_resp *resp)
{
	int cfd, rc = -EEXIST;

	session_sweep(req->cfg);
	if ((cfd = open_client(req, true, resp)) < 0)
		return -1;
	/* A UUID collision is astronomically unlikely, but costs nothing to survive. */
	for (int i = 0; i < 4 && rc == -EEXIST; i++) {
		if (session_new_id(req->cfg, id, idlen) < 0)
			break;
		rc = session_create_named(req, cfd, id, out, resp);
	}
	close(cfd);
	if (rc != 0 && !resp->status)
		api_error(resp, 500, "internal_error", NULL, "No session id could be made.");
	return rc == 0 ? 0 : -1;
}

static int by_created(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a,
			   *y = *(struct json_object *const *)b;
	struct json_object *cx = NULL, *cy = NULL, *ix = NULL, *iy = NULL;
	int c;

	json_object_object_get_ex(x, "created_at", &cx);
	json_object_object_get_ex(y, "created_at", &cy);
	c = strcmp(json_object_get_string(cx), json_object_get_string(cy));
	if (c)
		return c;
	json_object_object_get_ex(x, "id", &ix);
	json_object_object_get_ex(y, "id", &iy);
	return strcmp(json_object_get_string(ix), json_object_get_string(iy));
}

struct json_object *session_list(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *arr = json_object_new_array(), *o;
	int cfd = open_client(req, false, resp), fd = -1;
	int64_t now = now_s();
	DIR *d = NULL;
	struct dirent *e;

	if (cfd == -1) {
		json_object_put(arr);
		return NULL;
	}
	if (cfd >= 0 && (fd = openat(cfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
	    (d = fdopendir(fd)) != NULL)
		fd = -1;
	while (d && (e = readdir(d)) && json_object_array_length(arr) < SESSION_LIST_MAX) {
		struct session s = {.cfg = req->cfg};
		char owner[256];
		int dfd;

		if (e->d_name[0] == '.' || !session_id_valid(e->d_name, strlen(e->d_name)))
			continue;
		dfd = openat(cfd, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (meta_read(dfd, &s, owner, sizeof(owner)) == 0 && !strcmp(owner, req->client) &&
		    s.expires_at > now) {
			o = json_object_new_object();
			json_object_object_add(o, "id", json_object_new_string(e->d_name));
			session_json_time(o, "created_at", s.created_at);
			session_json_time(o, "last_used_at", s.last_used_at);
			session_json_time(o, "expires_at", s.expires_at);
			json_object_array_add(arr, o);
		}
		close(dfd);
	}
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
	if (cfd >= 0)
		close(cfd);
	json_object_array_sort(arr, by_created);
	return arr;
}
