/* store.h: the session store: sessions on disk (ids, metadata, locks, expiry, quota, fork,
 * scratch roots, btrfs volumes) and the safe path primitives beneath a root fd.
 *
 * The store knows nothing of HTTP or JSON (it includes neither the http/ headers nor json-c):
 * every call returns 0 (or an fd, a count) or -errno, and says what failed and where in a
 * struct store_err; the handlers decide what the client is told (handlers/errors.c).
 *
 * On-disk layout under conf->state_dir (everything owned by the sbx user):
 *   sessions/.sweep                    lock file; its mtime rate-limits the expiry sweep
 *   sessions/<client-key>/             one directory per client: "u-<name>" when the name is
 *                                      1-64 of [A-Za-z0-9_-], else "h-<hex of the name>", so a
 *                                      client name can never add a path element
 *   sessions/<client-key>/.lock        flock: session creation and the per-client cap
 *   sessions/<client-key>/<id>/        one session ([A-Za-z0-9_-]{1,64}, never a dot name)
 *       meta.json                      {owner, created_at, last_used_at, expires_at} (epoch s),
 *                                      replaced atomically (temp + rename)
 *       contexts, contexts.lock         the session's contexts, one line each (contexts.c)
 *       lock                           flock: metadata updates, quota check + rename, fork
 *       files/                         the session's root, mounted at /work for runs; on
 *                                      btrfs a subvolume with a qgroup limit (the quota)
 *   sessions/<client-key>/.new-*       a session (or fork) being built; renamed into place
 *   sessions/<client-key>/.trash-*     a deleted session being removed
 *   scratch/<uuid>/                    stateless runs (scratch_create); subvolumes on btrfs */
#ifndef SBX_STORE_H
#define SBX_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SESSION_ID_MAX 64		/* seed ids: 1-64 of [A-Za-z0-9_-] */
#define SESSION_PATH_MAX 4096		/* a file path in a request, bytes */
#define SESSION_NAME_MAX 255		/* one path segment, bytes */
#define SESSION_TREE_MAX_ENTRIES 10000	/* entries listed by GET .../files */
#define SESSION_WALK_MAX_ENTRIES 200000 /* entries walked for usage; past it: quota_exceeded */
#define SESSION_WALK_MAX_DEPTH 128	/* directory depth walked, listed and forked */
#define SESSION_SWEEP_INTERVAL_S 60	/* at most one expiry sweep per minute per state dir */
#define SESSION_STALE_S 3600		/* leftover .new-*, scratch dirs older than this go */
#define SESSION_LIST_MAX 10000		/* sessions listed per client */

/* What the store needs of the service's configuration (filled by the handlers from theirs). */
struct store_conf {
	const char *state_dir; /* sessions/, scratch/ live here */
	const char *shard;     /* prefixed to new session ids ("<shard>-<uuid>"), or NULL */
	uint64_t ttl_s;	       /* idle TTL, 0: none */
	uint64_t max_lifetime_s;
	uint64_t quota_bytes; /* per session (and per scratch root), 0: none */
	uint32_t sessions_per_client;
	uint32_t
	    client_share_pct;	/* of the volume, one client's sessions' quotas together; 0: off */
	uint64_t reserve_bytes; /* free space the volume keeps: writes below it fail (ENOSPC) */
	/* Sets the qgroup limit of a btrfs run root (only the broker can: it needs root). 0 or
	 * -errno with a message in err. NULL: no way to set one, so no btrfs root with a quota
	 * can be made (fail closed, never a root without its quota). */
	int (*set_quota)(void *ctx, int dirfd, uint64_t bytes, char *err, size_t errlen);
	void *set_quota_ctx;
	/* Ends one context of a session that is going (deleted or expired): the broker's
	 * sbx_client_ctx_delete. NULL: nothing to end (the store's unit tests). */
	void (*ctx_end)(void *ctx, const char *ctx_id);
	void *ctx_end_ctx;
	/* Kills the background runs of a session that is going (deleted, expired by its idle TTL
	 * or its lifetime, by the sweep or on access): they work in its directory. Called after the
	 * session is renamed away, so no new run can start in it. NULL: none (unit tests). */
	void (*runs_end)(void *ctx, const char *owner, const char *session_id);
	void *runs_end_ctx;
};

/* Why a call failed, beyond its errno: the handlers' error table is keyed on both. */
enum store_why {
	STORE_WHY_NONE = 0,
	STORE_WHY_PATH,	     /* EINVAL: a malformed path (fs_path_check) */
	STORE_WHY_INTO_SELF, /* EINVAL: a directory moved into itself */
	STORE_WHY_SPECIAL,   /* ENXIO: a socket, FIFO or device where a regular file is needed */
	STORE_WHY_SOURCE,    /* EIO: the bytes to write could not be read (or ended short) */
	STORE_WHY_QUOTA,     /* EDQUOT by the store's own count: left / limit filled */
	STORE_WHY_RESERVE,   /* ENOSPC: the volume is at its reserve: left / limit filled */
	STORE_WHY_SESSIONS,  /* EUSERS: the client has limit sessions already */
	STORE_WHY_SESSION,   /* ENOENT: no such session (missing, expired or another client's) */
	STORE_WHY_ID,	     /* EINVAL: a malformed session id */
	STORE_WHY_CLIENT,    /* EACCES: no usable client name */
	STORE_WHY_DEPTH,     /* ELOOP: a tree deeper than SESSION_WALK_MAX_DEPTH */
	STORE_WHY_VOLUME,    /* EIO (or what the broker said): the quota could not be set; msg */
};

/* What failed and where: filled by a failing call, read by the handler that chose to call it. */
struct store_err {
	int err;	    /* positive errno, 0 when nothing failed */
	enum store_why why; /* STORE_WHY_NONE: the errno says it all */
	int at;		    /* which of the call's paths: 0 the (source) path, 1 the destination */
	uint64_t left;	    /* QUOTA, RESERVE: bytes that were left; SOURCE: bytes read */
	uint64_t limit;	    /* QUOTA: the quota; RESERVE: the reserve; SESSIONS: the cap;
			       SOURCE: bytes announced */
	char msg[160];	    /* VOLUME: what the broker said */
};

/* ---- base.c: the error detail, ids, unique names, top directories (calls nothing else) ---- */

/* Fill e (may be NULL) and return -err. */
int store_fail(struct store_err *e, int err, enum store_why why, int at);

struct session {
	const struct store_conf *conf;
	char id[SESSION_ID_MAX + 1];
	int client_fd; /* O_PATH: sessions/<client-key> */
	int dir_fd;    /* O_PATH: the session directory */
	int root_fd;   /* O_PATH: files/ */
	int64_t created_at, last_used_at, expires_at;
};

/* One line of session_list. */
struct session_info {
	char id[SESSION_ID_MAX + 1];
	int64_t created_at, last_used_at, expires_at;
};

/* True when id is 1-64 of [A-Za-z0-9_-] (a UUID is one). */
bool session_id_valid(const char *id, size_t len);

/* A random (version 4) UUID into out (at least 37 bytes). 0, or -1 when getrandom fails. */
int session_uuid(char *out, size_t outlen);

/* A unique name: prefix + 16 random hex digits, into out. */
void fs_temp_name(char *out, size_t outlen, const char *prefix);

/* O_PATH fd of state_dir/<sub> ("sessions", "scratch"), made (0700) if missing; -1 on failure. */
int session_top_fd(const struct store_conf *conf, const char *sub);

/* ---- meta.c: a session's meta.json (no JSON library) ---- */

/* Read dir_fd/meta.json: times and owner (ownerlen bytes with its NUL). 0, or -1 when missing
 * or not the flat object meta_write makes (members in any order, any whitespace). */
int store_meta_read(int dir_fd, int64_t *created, int64_t *last_used, char *owner, size_t ownerlen);
/* Replace dir_fd/meta.json atomically (temp + rename). 0 or -errno. */
int store_meta_write(int dir_fd, const char *owner, int64_t created, int64_t last_used,
		     int64_t expires);

/* ---- contexts.c: the session's contexts (the broker holds them; this is their record) ---- */

#define STORE_CTX_ID_LEN 32 /* lowercase hex, server-made (SBX_CTX_ID_LEN) */
#define STORE_CTX_MAX 64    /* contexts recorded per session */

struct store_ctx {
	char id[STORE_CTX_ID_LEN + 1];
	char language[8]; /* "python" or "bash" */
	int64_t created_at;
	bool is_default;    /* the session's default context of its language (POST .../repl) */
	uint32_t memory_mb; /* its life's limits, as made (0: the defaults) */
	uint32_t processes;
};

/* True when id is 32 lowercase hex digits. */
bool store_ctx_id_valid(const char *id);
/* The contexts recorded in the session directory dir_fd, oldest first (at most max). 0 or
 * -errno (none recorded: 0 with *n = 0). */
int store_ctx_list(int dir_fd, struct store_ctx *out, size_t max, size_t *n);
/* The one of that id (or the default one of language): 0, -ENOENT, or -errno. */
int store_ctx_find(int dir_fd, const char *id, struct store_ctx *out);
int store_ctx_default(int dir_fd, const char *language, struct store_ctx *out);
/* Record c in s (under its lock). 0, -EEXIST (the id, or a default of that language, is there:
 * a concurrent repl call made it), -EUSERS (STORE_CTX_MAX recorded), or -errno. */
int store_ctx_add(const struct session *s, const struct store_ctx *c);
/* Forget id. 0, -ENOENT, or -errno. */
int store_ctx_remove(const struct session *s, const char *id);
/* conf->ctx_end for every context recorded in dir_fd (a session being removed). */
void store_ctx_end_all(const struct store_conf *conf, int dir_fd);

/* ---- session.c: sessions (over base, path, tree, disk and scratch) ---- */

/* A new server-made session id into out (at least SESSION_ID_MAX + 1 bytes): a UUID, prefixed
 * with "<shard>-" when conf->shard is set, so nginx can route every later request on the session
 * to this host (nginx/sbx-cluster.conf.in). 0, or -1. */
int session_new_id(const struct store_conf *conf, char *out, size_t outlen);

/* Open client's session id and touch last_used_at: *out is a session the caller closes with
 * session_close(). 0, or -errno: -ENOENT (why SESSION) for a missing, expired or foreign session
 * (the same answer), -EACCES (CLIENT), -EINVAL (ID) for a malformed id when create. With create
 * (seed routes) the first use makes the session, the id chosen by the client; then also -EUSERS
 * (SESSIONS), -ENOSPC (RESERVE). */
int session_open(const struct store_conf *conf, const char *client, const char *id, bool create,
		 struct session **out, struct store_err *e);
void session_close(struct session *s);

/* Create a session (server-made id) for client into *out (times filled; its fds are not kept).
 * 0, or -errno: -EUSERS (SESSIONS), -ENOSPC (RESERVE), -EACCES (CLIENT), others. */
int session_create(const struct store_conf *conf, const char *client, struct session *out,
		   struct store_err *e);

/* client's live sessions, oldest first, into a new array *out of *n (caller frees it). 0 or
 * -errno. */
int session_list(const struct store_conf *conf, const char *client, struct session_info **out,
		 size_t *n, struct store_err *e);

/* Copy src's files into a new session of the same client, whose id goes to new_id (at least
 * SESSION_ID_MAX + 1 bytes). 0, or -errno: -EDQUOT (the source is over its quota), -ELOOP
 * (DEPTH), -EUSERS (SESSIONS), -ENOSPC (RESERVE), -ENOENT (SESSION: it went meanwhile). */
int session_fork(struct session *src, const char *client, char *new_id, size_t idlen,
		 struct store_err *e);

/* Remove the session (rename to trash under its lock, then remove the tree). s stays open (the
 * caller closes it). 0, or -ENOENT (SESSION) when it went meanwhile, or -errno. */
int session_remove(struct session *s, struct store_err *e);

/* Bytes the session may still store (0 when full or over); UINT64_MAX when the quota is off or
 * held by the kernel (files/ a btrfs subvolume: its qgroup limit also frees up during a run that
 * deletes files). For the run path: cap file_size_bytes with it before a run. */
uint64_t session_quota_left(const struct session *s);

/* Exclusive flock on the session's lock file. Returns an fd to pass to session_unlock(), or -1. */
int session_lock(const struct session *s);
int session_lock_fail(struct store_err *e);
/* Whether s's directory was removed (by a concurrent delete) since it was opened. */
bool session_gone(const struct session *s);
void session_unlock(int lock_fd);

/* Remove expired sessions, leftovers of crashed workers and stale scratch directories. Cheap when
 * another worker swept less than SESSION_SWEEP_INTERVAL_S ago (one flock + fstat); safe to call
 * after every request or from an idle timer. */
void session_sweep(const struct store_conf *conf);

/* The volume's reserve group, qgroup "1/4242": the broker's SBX_QUOTA_PARENT (sandbox.h; the store
 * does not include the sandbox's header, a unit test checks that the two agree). Forks join it. */
#define STORE_RESERVE_QGROUP ((1ull << 48) | 4242)

/* ---- disk.c: the volume's free space and the reserve ---- */

/* Free bytes (for an unprivileged writer) and total bytes of the volume holding the sessions
 * (state_dir/sessions).
 * 0 or -errno. */
int store_disk_space(const struct store_conf *conf, uint64_t *free_bytes, uint64_t *total_bytes);

/* 0 when the volume has more than conf->reserve_bytes free plus need bytes; else -ENOSPC (why
 * RESERVE, left = free bytes, limit = the reserve). A volume whose space cannot be read passes
 * (the write itself then fails as it would have). */
int store_reserve_check(const struct store_conf *conf, uint64_t need, struct store_err *e);

/* ---- counters.c: what the metrics count on disk ---- */

/* Sessions on disk, all clients (directories under state_dir/sessions/<client>/). 0 or -errno. */
int store_session_count(const struct store_conf *conf, uint64_t *n);

/* nginx's refusals of one reason: the lines of state_dir/log/<name>, which nginx writes as one
 * 2-byte line per refusal (nginx/nginx.conf.in). 0 (*n = 0 when the file is not there yet) or
 * -errno (not a regular file, a bad name). */
int store_refusal_count(const struct store_conf *conf, const char *name, uint64_t *n);

/* ---- scratch.c: run roots on disk, scratch directories ---- */

/* True when dirfd is on btrfs: run roots made in it are subvolumes with a qgroup limit. */
bool vol_on_btrfs(int dirfd);

/* Make name in the directory parent (any fd, O_PATH is enough) the root of a run's /work: on
 * btrfs a subvolume (a snapshot of snap_src when snap_src >= 0 is a subvolume root opened for
 * reading; *copied is then true) limited to conf->quota_bytes by conf->set_quota; elsewhere a
 * plain directory. 0, or -errno (why VOLUME when the quota could not be set) and nothing left
 * behind: without its quota no root is kept (fail closed). */
int vol_make_root(const struct store_conf *conf, int parent, const char *name, int snap_src,
		  bool *copied, struct store_err *e);

/* True when fd (O_PATH is enough) is the root of a btrfs subvolume, i.e. a run root made by
 * vol_make_root on btrfs, whose quota the kernel holds. */
bool vol_is_subvol(int fd);

/* fs_rm_tree, but a subvolume (name itself or one of its direct subdirectories) is dropped at once
 * by the kernel first. 0 or -errno. */
int vol_rm_tree(int parent, const char *name);

/* True when runs in sessions are held to the quota by the kernel: state_dir/sessions is on btrfs
 * with quotas enabled and a quota is configured (for the health route). */
bool session_quota_in_runs(const struct store_conf *conf);

/* Remove scratch directories older than SESSION_STALE_S (left by a worker that died). */
void scratch_sweep(const struct store_conf *conf, int64_t now);

/* A fresh private directory for a stateless run (path, at least 4096 bytes, receives its path
 * for scratch_destroy). Returns an O_DIRECTORY fd, or -errno (-ENOSPC: RESERVE). */
int scratch_create(const struct store_conf *conf, char *path, size_t pathlen, struct store_err *e);
void scratch_destroy(const struct store_conf *conf, int fd, const char *path);

/* ---- path.c (path primitives), tree.c (whole trees) and fs.c (the file operations, over
 * sessions): never follow a symlink, never leave the root ---- */

#define FS_CHUNK (64u << 10) /* I/O chunk of file copies and uploads, bytes */

/* An upload is written to a temp file of this prefix beside its target, then renamed over it.
 * The prefix is reserved: no API path may name it, listings, file counts and forks leave such
 * files out, and one untouched for SESSION_STALE_S (its worker died) is removed by the next
 * usage walk. Its bytes count against the quota while it exists. */
#define FS_UPLOAD_PREFIX ".sbx-tmp-"
bool fs_upload_temp(const char *name, size_t len); /* one name of len bytes */
bool fs_upload_temp_path(const char *path);	   /* the last segment of a relative path */

/* 0 when path is a well-formed relative path (no "", ".", "..", leading '/', NUL, empty
 * segment, over SESSION_PATH_MAX bytes, a segment over SESSION_NAME_MAX or one that begins with
 * FS_UPLOAD_PREFIX); -1 otherwise. */
int fs_path_check(const char *path, size_t len);

/* openat2 beneath dirfd with RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|NO_XDEV (retried on
 * EAGAIN). Returns an fd (caller closes) or -errno. */
int fs_open(int dirfd, const char *path, int flags, mode_t mode);

/* O_PATH fd of path's parent directory beneath root (made per segment when create), with *base
 * pointing at the last segment inside path. Returns the fd (caller closes) or -errno. */
int fs_parent(int root, const char *path, bool create, const char **base);

/* The regular file path beneath root, opened for reading without blocking or following
 * anything, with *st filled. Returns the fd (caller closes), or -errno: -EINVAL (PATH),
 * -ENOENT, -EISDIR, -ENXIO (SPECIAL) for a socket, FIFO or device. */
int fs_open_file(int root, const char *path, size_t len, struct stat *st, struct store_err *e);

/* tree.c: remove name (file, symlink or whole tree) beneath dirfd without following symlinks.
 * Makes unreadable directories readable first (they are ours on disk). 0 or -errno. */
int fs_rm_tree(int dirfd, const char *name);

/* Rename name to a hidden unique name in the same directory, then remove it: whoever still holds
 * an fd into it (a run) keeps working on a detached tree. 0 or -errno. */
int fs_discard(int dirfd, const char *name, const char *prefix);

/* Copy every regular file, directory and symlink of the readable directory src into the readable
 * directory dst (symlinks as symlinks; FIFOs, devices, sockets and upload temp files skipped).
 * *budget is the byte allowance, decremented; -EDQUOT when exceeded. 0 or -errno. */
int fs_copy_tree(int src, int dst, uint64_t *budget);

/* Visit every entry beneath the readable directory dirfd, sorted per directory, depth-first.
 * path is relative ("a/b"). cb returns 0 to go on, non-zero to stop (returned as is). Returns 0,
 * 1 when max_entries was reached (the rest is not visited), or -errno. */
typedef int (*fs_walk_cb)(void *ctx, const char *path, const struct stat *st);
int fs_walk(int dirfd, size_t max_entries, fs_walk_cb cb, void *ctx);

/* Bytes (regular files and symlinks) and non-directory entries beneath root (an O_PATH fd is
 * enough). Upload temp files count in bytes, not in files; stale ones are removed. 0, or -EDQUOT
 * when over SESSION_WALK_MAX_ENTRIES, or -errno. */
int fs_usage(int root, uint64_t *bytes, uint64_t *files);

/* Where the bytes of an atomic write come from. */
struct fs_source {
	ssize_t (*read)(void *ctx, char *buf, size_t len); /* bytes, 0 at the end, -1 on error */
	void *ctx;
	int64_t total; /* announced length, or -1 */
};

/* A body already in memory, as the ctx of an fs_source whose read is fs_mem_read. */
struct fs_mem {
	const char *buf;
	size_t len, off;
};
ssize_t fs_mem_read(void *ctx, char *buf, size_t len);
/* An fs_source over m (which the caller keeps alive while it is read). */
#define FS_MEM_SOURCE(m) ((struct fs_source){fs_mem_read, &(m), (int64_t)(m).len})

/* Write src into path beneath s's root atomically: parents made, a temp file in the target's
 * directory, the session quota checked under the session lock, then renameat. Nothing partial is
 * left on failure. 0 (with *created and *size) or -errno: -EINVAL (PATH), -EISDIR, -EDQUOT
 * (QUOTA), -ENOSPC (RESERVE, or the volume itself), -EIO (SOURCE), others. */
int fs_write_atomic(struct session *s, const char *path, size_t plen, struct fs_source *src,
		    bool *created, uint64_t *size, struct store_err *e);

/* Remove path (a directory with its whole tree). 0 or -errno (at 0). */
int fs_delete(struct session *s, const char *path, size_t plen, struct store_err *e);
/* Move from to to (parents of to made). 0 or -errno, e->at saying which path it is about:
 * -EINVAL (PATH, or INTO_SELF), -ENOENT, -EEXIST (when !overwrite), others. */
int fs_move(struct session *s, const char *from, size_t flen, const char *to, size_t tlen,
	    bool overwrite, struct store_err *e);

#endif
