/* store.h: the session store's interface, shared by the store files, handlers/files.c
 * and handlers/seed.c, plus the two calls the run path and the accept loop need
 * (session_quota_left, session_sweep).
 *
 * On-disk layout under cfg->state_dir (everything owned by the sbx user):
 *   sessions/.sweep                    lock file; its mtime rate-limits the expiry sweep
 *   sessions/<client-key>/             one directory per client: "u-<name>" when the name is
 *                                      1-64 of [A-Za-z0-9_-], else "h-<hex of the name>", so a
 *                                      client name can never add a path element
 *   sessions/<client-key>/.lock        flock: session creation and the per-client cap
 *   sessions/<client-key>/<id>/        one session ([A-Za-z0-9_-]{1,64}, never a dot name)
 *       meta.json                      {owner, created_at, last_used_at, expires_at} (epoch s),
 *                                      replaced atomically (temp + rename)
 *       lock                           flock: metadata updates, quota check + rename, fork
 *       files/                         the session's root, mounted at /work for runs; on
 *                                      btrfs a subvolume with a qgroup limit (the quota)
 *   sessions/<client-key>/.new-*       a session (or fork) being built; renamed into place
 *   sessions/<client-key>/.trash-*     a deleted session being removed
 *   scratch/<uuid>/                    stateless runs (scratch_create); subvolumes on btrfs */
#ifndef SBX_STORE_H
#define SBX_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../http/api.h"

#define SESSION_ID_MAX 64		/* seed ids: 1-64 of [A-Za-z0-9_-] */
#define SESSION_PATH_MAX 4096		/* a file path in a request, bytes */
#define SESSION_NAME_MAX 255		/* one path segment, bytes */
#define SESSION_TREE_MAX_ENTRIES 10000	/* entries listed by GET .../files */
#define SESSION_WALK_MAX_ENTRIES 200000 /* entries walked for usage; past it: quota_exceeded */
#define SESSION_WALK_MAX_DEPTH 128	/* directory depth walked, listed and forked */
#define SESSION_SWEEP_INTERVAL_S 60	/* at most one expiry sweep per minute per state dir */
#define SESSION_STALE_S 3600		/* leftover .new-*, scratch dirs older than this go */

struct session {
	const struct config *cfg;
	char id[SESSION_ID_MAX + 1];
	int client_fd; /* O_PATH: sessions/<client-key> */
	int dir_fd;    /* O_PATH: the session directory */
	int root_fd;   /* O_PATH: files/ */
	int64_t created_at, last_used_at, expires_at;
};

/* ---- session.c ---- */

/* True when id is 1-64 of [A-Za-z0-9_-] (a UUID is one). */
bool session_id_valid(const char *id, size_t len);

/* Bytes the session may still store (0 when full or over); UINT64_MAX when the quota is off or
 * held by the kernel (files/ a btrfs subvolume: its qgroup limit also frees up during a run that
 * deletes files). For the run path: cap file_size_bytes with it before a run. */
uint64_t session_quota_left(const struct session *s);

/* Exclusive flock on the session's lock file. Returns an fd to pass to session_unlock(), or -1. */
int session_lock(const struct session *s);
void session_unlock(int lock_fd);

/* Remove expired sessions, leftovers of crashed workers and stale scratch directories. Cheap when
 * another worker swept less than SESSION_SWEEP_INTERVAL_S ago (one flock + fstat); safe to call
 * after every request or from an idle timer. */
void session_sweep(const struct config *cfg);

/* "2026-11-21T21:56:35Z" into out (at least 21 bytes). */
void session_iso_time(int64_t t, char *out, size_t outlen);
/* Add key: the ISO time of t to the object o. */
void session_json_time(struct json_object *o, const char *key, int64_t t);

/* Create a /v1 session (server-made id into id, at least SESSION_ID_MAX + 1 bytes: see
 * session_new_id) for the caller; out gets
 * its times. 0, or -1 with resp filled (409 too_many_sessions, 500). */
int session_create(const struct api_req *req, struct session *out, char *id, size_t idlen,
		   struct api_resp *resp);

/* The caller's live sessions as a new array of {id, created_at, last_used_at, expires_at},
 * oldest first (caller owns it), or NULL with resp filled. */
struct json_object *session_list(const struct api_req *req, struct api_resp *resp);

/* Copy src's files into a new session of the same client and return its id in new_id (at least
 * SESSION_ID_MAX + 1 bytes). 0, or -1 with resp filled (404 / 409 too_many_sessions / 507 quota_exceeded). */
int session_fork(const struct api_req *req, struct session *src, char *new_id, size_t idlen,
		 struct api_resp *resp);

/* Remove the session (rename to trash under its lock, then remove the tree). s stays open (the
 * caller closes it). 0, or -1 with resp filled (404 when it went meanwhile). */
int session_remove(struct session *s, struct api_resp *resp);

/* O_PATH fd of state_dir/<sub> ("sessions", "scratch"), made (0700) if missing; -1 on failure. */
int session_top_fd(const struct config *cfg, const char *sub);

/* A random (version 4) UUID into out (at least 37 bytes). 0, or -1 when getrandom fails. */
int session_uuid(char *out, size_t outlen);

/* ---- handlers/sessions.c ---- */

/* A new server-made session id into out (at least SESSION_ID_MAX + 1 bytes): a UUID, prefixed
 * with "<shard>-" when this host has a shard name (cfg->shard). 0, or -1. */
int session_new_id(const struct config *cfg, char *out, size_t outlen);

/* ---- scratch.c: run roots on disk, scratch directories ---- */

/* True when dirfd is on btrfs: run roots made in it are subvolumes with a qgroup limit. */
bool vol_on_btrfs(int dirfd);

/* Make name in the directory parent (any fd, O_PATH is enough) the root of a run's /work: on
 * btrfs a subvolume (a snapshot of snap_src when snap_src >= 0 is a subvolume root opened for
 * reading; *copied is then true) limited to cfg->session_quota_bytes by the broker; elsewhere a
 * plain directory. 0, or -1 with resp filled (500 when the broker cannot set the quota, 507) and
 * nothing left behind: without its quota no root is kept (fail closed). */
int vol_make_root(const struct config *cfg, int parent, const char *name, int snap_src,
		  bool *copied, struct api_resp *resp);

/* True when fd (O_PATH is enough) is the root of a btrfs subvolume, i.e. a run root made by
 * vol_make_root on btrfs, whose quota the kernel holds. */
bool vol_is_subvol(int fd);

/* fs_rm_tree, but a subvolume (name itself or one of its direct subdirectories) is dropped at once
 * by the kernel first. 0 or -errno. */
int vol_rm_tree(int parent, const char *name);

/* True when runs in sessions are held to the quota by the kernel: state_dir/sessions is on btrfs
 * with quotas enabled and a quota is configured (for the health route). */
bool session_quota_in_runs(const struct config *cfg);

/* Remove scratch directories older than SESSION_STALE_S (left by a worker that died). */
void scratch_sweep(const struct config *cfg, int64_t now);

/* ---- fs.c (paths, single files) and tree.c (whole trees): never follow a
 * symlink, never leave the root ---- */

#define FS_CHUNK (64u << 10) /* I/O chunk of file copies and uploads, bytes */

/* An upload is written to a temp file of this prefix beside its target, then renamed over it.
 * The prefix is reserved: no API path may name it, listings, file counts and forks leave such
 * files out, and one untouched for SESSION_STALE_S (its worker died) is removed by the next
 * usage walk. Its bytes count against the quota while it exists. */
#define FS_UPLOAD_PREFIX ".sbx-tmp-"
bool fs_upload_temp(const char *name, size_t len); /* one name of len bytes */
bool fs_upload_temp_path(const char *path);        /* the last segment of a relative path */

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

/* tree.c: remove name (file, symlink or whole tree) beneath dirfd without following symlinks. Makes
 * unreadable directories readable first (they are ours on disk). 0 or -errno. */
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
 * left on failure. 0 (with *created) or -1 with resp filled (field names the path's field). */
int fs_write_atomic(struct session *s, const char *path, size_t plen, const char *field,
		    struct fs_source *src, bool *created, struct api_resp *resp);

/* A unique name: prefix + 16 random hex digits, into out. */
void fs_temp_name(char *out, size_t outlen, const char *prefix);

/* Fill resp for a failed file operation on path (err is a positive errno). */
void fs_error(struct api_resp *resp, int err, const char *field, const char *path);

/* Shared by /v1 and seed routes: 0 or -1 with resp filled. */
int fs_delete(struct session *s, const char *path, size_t plen, const char *field,
	      struct api_resp *resp);
int fs_move(struct session *s, const char *from, size_t flen, const char *ffield, const char *to,
	    size_t tlen, const char *tfield, bool overwrite, struct api_resp *resp);

#endif
