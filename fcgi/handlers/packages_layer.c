/* packages_layer.c: the stateless layers of "packages" on execute and evaluate.
 *
 * A layer is what the installer left for one package set, kept at state_dir/layers/<key>: key is
 * a hash of the language, the sorted requirement list and the directory's listing (names, sizes,
 * mtimes), so a file dropped in makes a new layer. It is built once (a lock file per key: the
 * first request builds, the others wait and find it) and then bound read-only into every run
 * that names the set, at SBX_LAYER_DIR (the broker mounts it: sbx_request.layer_fd): the same
 * inodes for every client, nothing copied per run.
 *
 * Locks (flock on .<key>.lock, never unlinked but by a holder of LOCK_EX, so whoever locks checks
 * it still holds the linked file): a run holds LOCK_SH for as long as its layer is mounted; a
 * build and an eviction hold LOCK_EX. Eviction (least recently used first: mtime, touched on
 * use) runs after each build until the layers fit packages.layers_max_mb, skipping layers in use
 * (LOCK_EX | LOCK_NB fails): a layer is never removed from under a running program. A client
 * builds at most PKG_BUILDS_PER_CLIENT layers at once (lock files .build-<client hash>-<i>): a
 * flood of distinct sets gets 429, never every worker or the disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../store/ccache.h"
#include "handlers.h"
#include "packages.h"
#include "packages_int.h"

/* Layers one client may be building at once (across every worker). */
#define PKG_BUILDS_PER_CLIENT 2

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void layer_key(const struct pkg_set *set, const struct pkg_reqs *reqs, char key[65])
{
	struct sha256 h;
	uint8_t d[32];

	sha256_init(&h);
	sha256_update(&h, set->lang, strlen(set->lang) + 1);
	for (size_t i = 0; i < reqs->n; i++)
		sha256_update(&h, reqs->r[i], strlen(reqs->r[i]) + 1);
	sha256_update(&h, "", 1);
	for (size_t i = 0; i < set->n; i++) {
		sha256_update(&h, set->e[i].file, strlen(set->e[i].file) + 1);
		sha256_update(&h, &set->e[i].size, sizeof(set->e[i].size));
		sha256_update(&h, &set->e[i].mtime_ns, sizeof(set->e[i].mtime_ns));
	}
	sha256_final(&h, d);
	hex(d, 32, key);
}

static bool is_layer(const char *name)
{
	size_t n = strlen(name);

	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/* Open the lock file of layer key and flock it (op). The file is the one linked at its name
 * (an evictor or a failed build unlinks it under LOCK_EX; a lock on an unlinked file guards
 * nothing). fd, or -errno (-EWOULDBLOCK with LOCK_NB). */
static int layer_lock(int lfd, const char *key, int op)
{
	char name[80];

	snprintf(name, sizeof(name), ".%s.lock", key);
	for (int tries = 0; tries < 16; tries++) {
		struct stat a, b;
		int fd = openat(lfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600), e;

		if (fd < 0)
			return -errno;
		if (flock(fd, op) < 0) {
			e = errno;
			close(fd);
			return -e;
		}
		if (fstat(fd, &a) == 0 && fstatat(lfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

/* Unlink key's lock file; the caller holds it LOCK_EX (waiters then retry on a fresh one). */
static void layer_unlock_forget(int lfd, const char *key, int lock)
{
	char name[80];

	snprintf(name, sizeof(name), ".%s.lock", key);
	unlinkat(lfd, name, 0);
	close(lock);
}

/* Whether lock (held) is still key's linked lock file and the layer exists. */
static bool layer_held(int lfd, const char *key, int lock)
{
	char name[80];
	struct stat a, b;

	snprintf(name, sizeof(name), ".%s.lock", key);
	return fstat(lock, &a) == 0 && fstatat(lfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev &&
	       fstatat(lfd, key, &b, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(b.st_mode);
}

/* Remove the least recently used layers not in use (and never keep) until they hold at most
 * cap bytes. Serialised by .evict.lock so two builders do not count the same bytes. */
static void layers_evict(int lfd, const char *keep, uint64_t cap)
{
	struct {
		char name[65];
		int64_t t;
		uint64_t bytes;
	} *v = NULL;
	size_t n = 0, vcap = 0;
	uint64_t total = 0;
	int ev = openat(lfd, ".evict.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	int fd = openat(lfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (ev < 0 || flock(ev, LOCK_EX) < 0 || !d) {
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		if (ev >= 0)
			close(ev);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		uint64_t bytes = 0;
		int l;

		if (!is_layer(de->d_name) ||
		    fstatat(lfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		l = openat(lfd, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (l < 0)
			continue;
		fs_usage(l, &bytes, NULL);
		close(l);
		if (n == vcap) {
			void *nv = realloc(v, (vcap = vcap ? vcap * 2 : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		v[n].bytes = bytes;
		total += bytes;
		n++;
	}
	closedir(d);
	while (total > cap) {
		size_t old = n;
		int lock;

		for (size_t i = 0; i < n; i++)
			if (v[i].name[0] && strcmp(v[i].name, keep) != 0 &&
			    (old == n || v[i].t < v[old].t))
				old = i;
		if (old == n)
			break;
		/* In use (a run holds it LOCK_SH) or being built: skipped, never pulled away. */
		lock = layer_lock(lfd, v[old].name, LOCK_EX | LOCK_NB);
		if (lock >= 0) {
			fs_discard(lfd, v[old].name, ".evict-");
			layer_unlock_forget(lfd, v[old].name, lock);
			total -= v[old].bytes;
		}
		v[old].name[0] = '\0';
	}
	/* Still over (layers in use were skipped): whoever ends a run tries again. */
	if (total > cap) {
		int p = openat(lfd, ".evict-pending", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			       0600);

		if (p >= 0)
			close(p);
	} else {
		unlinkat(lfd, ".evict-pending", 0);
	}
	free(v);
	close(ev);
}

/* One of the client's PKG_BUILDS_PER_CLIENT build slots, held until closed: fd, or -EBUSY. */
static int build_slot(int lfd, const char *client)
{
	struct sha256 h;
	uint8_t d[32];
	char who[17], name[64];

	sha256_init(&h);
	sha256_update(&h, client, strlen(client));
	sha256_final(&h, d);
	hex(d, 8, who);
	for (int i = 0; i < PKG_BUILDS_PER_CLIENT; i++) {
		int fd;

		snprintf(name, sizeof(name), ".build-%s-%d.lock", who, i);
		fd = openat(lfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
	}
	return -EBUSY;
}

/* Build key's layer (the caller holds its lock LOCK_EX, and it does not exist). 0; 1 when the
 * install failed (resp: the 200 stage "install" result); -1 with resp filled. */
static int layer_build(const struct api_req *req, const struct pkg_set *set,
		       const struct pkg_reqs *reqs, int lfd, const char *key, struct api_resp *resp)
{
	char tmp[96], spath[4096];
	int slot = -1, sroot = -1, rc = -1, r;
	uint64_t budget = req->cfg->layers_bytes;
	struct sbx_result res;
	FILE *log;

	memset(&res, 0, sizeof(res));
	slot = build_slot(lfd, req->client ? req->client : "");
	if (slot < 0 && slot != -EBUSY) {
		h_errno(resp, -slot, NULL, NULL);
		return -1;
	}
	if (slot < 0) {
		api_error(resp, 429, "too_many_builds", "packages",
			  "This client is already building %d package layers; retry when they are "
			  "done (a layer already built is served at once).",
			  PKG_BUILDS_PER_CLIENT);
		api_header(resp, "Retry-After: 5");
		return -1;
	}
	if (pkg_build(req, set, reqs, &sroot, spath, sizeof(spath), &res, resp) < 0)
		goto out;
	if (res.status != SBX_OK) {
		pkg_install_failed(resp, &res);
		rc = 1;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".build-%s", key);
	fs_rm_tree(lfd, tmp);
	/* One layer larger than the whole cache is refused rather than kept. */
	if ((r = pkg_copy_dir(sroot, "out", lfd, tmp, &budget)) < 0 ||
	    renameat(lfd, tmp, lfd, key) < 0) {
		fs_rm_tree(lfd, tmp);
		if (r == -EDQUOT) {
			api_error(resp, 507, "layer_too_large", "packages",
				  "These packages take more than the layer cache holds "
				  "(packages.layers_max_mb); install them into a session instead.");
			goto out;
		}
		h_errno(resp, r < 0 ? -r : errno, NULL, NULL);
		goto out;
	}
	/* The build log: one line per layer built (operators and tests read it). */
	r = openat(lfd, "builds.log", O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r >= 0 && (log = fdopen(r, "a"))) {
		fprintf(log, "%lld %s %s\n", (long long)time(NULL), set->lang, key);
		fclose(log);
	} else if (r >= 0) {
		close(r);
	}
	layers_evict(lfd, key, req->cfg->layers_bytes);
	rc = 0;
out:
	if (sroot >= 0)
		scratch_destroy(h_store(req->cfg), sroot, spath);
	sbx_result_free(&res);
	close(slot);
	return rc;
}

int pkg_layer_open(const struct api_req *req, const struct lang *lang, struct json_object *names,
		   struct pkg_layer *out, struct json_object **info, struct api_resp *resp)
{
	const char *pl = pkg_lang(lang->id);
	struct pkg_set set = {0};
	struct pkg_reqs reqs;
	char key[65], lpath[4096];
	int lfd = -1, lock = -1, r, rc = -1;
	bool built = false;

	memset(&reqs, 0, sizeof(reqs));
	out->fd = out->lock = out->dir = -1;
	out->env = NULL;
	*info = NULL;
	if (!pl) {
		api_error(resp, 400, "invalid_value", "packages",
			  "Language \"%s\" takes no packages (python and node do).", lang->id);
		return -1;
	}
	if ((r = pkg_set_read(req->cfg, pl, &set)) < 0) {
		h_errno(resp, -r, NULL, NULL);
		return -1;
	}
	if (pkg_reqs_parse(&set, names, "packages", &reqs, resp) < 0)
		goto out;
	layer_key(&set, &reqs, key);
	snprintf(lpath, sizeof(lpath), "%s/layers", req->cfg->state_dir);
	if (mkdir(lpath, 0700) < 0 && errno != EEXIST) {
		h_errno(resp, errno, NULL, NULL);
		goto out;
	}
	/* The service's own directory: no program ever sees it (a layer is mounted by itself). */
	lfd = open(lpath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0) {
		h_errno(resp, errno, NULL, NULL);
		goto out;
	}
	/* Found: a shared lock for the run. Missing: built under the exclusive lock (the others
	 * wait on it and then find the layer), then shared. An eviction slipping in between the
	 * two (flock does not convert atomically) sends us round again. */
	for (int tries = 0; tries < 4 && lock < 0; tries++) {
		lock = layer_lock(lfd, key, LOCK_SH);
		if (lock >= 0 && layer_held(lfd, key, lock))
			break;
		if (lock >= 0)
			close(lock);
		lock = layer_lock(lfd, key, LOCK_EX);
		if (lock < 0) {
			h_errno(resp, -lock, NULL, NULL);
			goto out;
		}
		if (faccessat(lfd, key, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
			r = layer_build(req, &set, &reqs, lfd, key, resp);
			if (r != 0) {
				layer_unlock_forget(lfd, key, lock);
				lock = -1;
				rc = r;
				goto out;
			}
			built = true;
		}
		if (flock(lock, LOCK_SH) < 0 || !layer_held(lfd, key, lock)) {
			close(lock);
			lock = -1;
		}
	}
	if (lock < 0) {
		h_errno(resp, EAGAIN, NULL, NULL);
		goto out;
	}
	if (!built)
		utimensat(lfd, key, NULL, AT_SYMLINK_NOFOLLOW); /* recently used */
	/* The broker mounts what this descriptor names: taken from our own directory, never a
	 * path a program could have changed. */
	out->fd = openat(lfd, key, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out->fd < 0) {
		h_errno(resp, errno, NULL, NULL);
		close(lock);
		goto out;
	}
	out->lock = lock;
	out->dir = lfd;
	out->cap = req->cfg->layers_bytes;
	lfd = -1;
	out->env = strcmp(pl, "python") == 0 ? "PYTHONPATH=" SBX_LAYER_DIR
					     : "NODE_PATH=" SBX_LAYER_DIR "/node_modules";
	*info = json_object_new_object();
	json_object_object_add(*info, "layer", json_object_new_string(key));
	json_object_object_add(*info, "cached", json_object_new_boolean(!built));
	rc = 0;
out:
	if (lfd >= 0)
		close(lfd);
	pkg_set_free(&set);
	return rc;
}

void pkg_layer_close(struct pkg_layer *l)
{
	if (l->fd >= 0)
		close(l->fd);
	if (l->lock >= 0)
		close(l->lock);
	/* An eviction that had to skip layers in use left a note: the cap holds once runs end. */
	if (l->dir >= 0 && faccessat(l->dir, ".evict-pending", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		layers_evict(l->dir, "", l->cap);
	if (l->dir >= 0)
		close(l->dir);
	l->fd = l->lock = l->dir = -1;
	l->env = NULL;
}
