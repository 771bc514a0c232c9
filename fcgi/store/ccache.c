/* ccache.c: the compile cache (ccache.h).
 *
 * Layout: state_dir/ccache/<client-key>/<64 hex>, one binary per key, owned by the service user
 * (0600: the workers copy it out, nobody runs it from here); .tmp-* files are entries being
 * written. Per client, because a shared cache's timing would tell one client what another
 * compiled. Written atomically (temp + rename), so a reader sees a whole entry or none. Bounded:
 * past max_bytes the entries used least recently (mtime: set at write and at every hit) go.
 *
 * What the program controls is never followed: the work dir is walked with openat() and
 * O_NOFOLLOW from an fd the worker holds, links and special files make the compile uncachable,
 * and the binary is read only after the compile run has ended (every process of it is gone),
 * opened O_NOFOLLOW, checked to be a regular file and bounded in size. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ccache.h"

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] +
		     w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->nbuf = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	s->len += len;
	while (len) {
		size_t n = 64 - s->nbuf < len ? 64 - s->nbuf : len;

		memcpy(s->buf + s->nbuf, p, n);
		s->nbuf += n, p += n, len -= n;
		if (s->nbuf == 64) {
			sha256_block(s, s->buf);
			s->nbuf = 0;
		}
	}
}

void sha256_final(struct sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad = 0x80, zero = 0, lenb[8];
	int i;

	sha256_update(s, &pad, 1);
	while (s->nbuf != 56)
		sha256_update(s, &zero, 1);
	for (i = 0; i < 8; i++)
		lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, lenb, 8);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

/* A length-prefixed field, so no two different inputs hash the same stream. */
static void hash_field(struct sha256 *s, char tag, const void *p, size_t len)
{
	uint64_t n = len;

	sha256_update(s, &tag, 1);
	sha256_update(s, &n, sizeof(n));
	sha256_update(s, p, len);
}

static void hash_u64(struct sha256 *s, char tag, uint64_t v)
{
	hash_field(s, tag, &v, sizeof(v));
}

/* ---- the client's directory ---- */

/* "u-<name>" for 1-64 of [A-Za-z0-9_-], else "h-<hex>": a name never adds a path element. */
static int client_key(const char *client, char *out, size_t outlen)
{
	size_t n = client ? strlen(client) : 0, i;

	if (n == 0 || n > 64)
		return -EINVAL;
	if (strspn(client, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n)
		return snprintf(out, outlen, "u-%s", client) < (int)outlen ? 0 : -EINVAL;
	if (2 + 2 * n + 1 > outlen)
		return -EINVAL;
	strcpy(out, "h-");
	for (i = 0; i < n; i++)
		sprintf(out + 2 + 2 * i, "%02x", (unsigned char)client[i]);
	return 0;
}

int ccache_open(const char *state_dir, const char *client, uint64_t max_bytes, struct ccache *c)
{
	char path[PATH_MAX], key[140];
	int top, rc;

	memset(c, 0, sizeof(*c));
	c->dir_fd = -1;
	if (!max_bytes)
		return -ENOTSUP;
	if (!state_dir || (rc = client_key(client, key, sizeof(key))) < 0)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/ccache", state_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	(void)mkdir(path, 0700);
	top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		return -errno;
	(void)mkdirat(top, key, 0700);
	c->dir_fd = openat(top, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = c->dir_fd < 0 ? -errno : 0;
	close(top);
	c->max_bytes = max_bytes;
	return rc;
}

void ccache_close(struct ccache *c)
{
	if (c->dir_fd >= 0)
		close(c->dir_fd);
	c->dir_fd = -1;
}

/* ---- the key ---- */

struct walk {
	struct sha256 *s;
	size_t files;
	uint64_t bytes;
	const char *skip; /* the binary's name, at the top level */
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int hash_file(struct walk *w, int fd, const char *rel, const struct stat *st)
{
	char buf[65536];
	uint64_t left = (uint64_t)st->st_size;

	if ((w->bytes += left) > CCACHE_MAX_SOURCE)
		return -ENOTSUP;
	hash_field(w->s, 'f', rel, strlen(rel));
	hash_u64(w->s, 's', left);
	while (left) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO; /* shrank while read: not a stable input */
		sha256_update(w->s, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	return 0;
}

/* Hash the directory dfd (readable; closed here) whose path under the root is rel. */
static int walk_dir(struct walk *w, int dfd, const char *rel, int depth)
{
	char **names = NULL, child[PATH_MAX];
	size_t n = 0, cap = 0, i;
	struct dirent *d;
	DIR *dir = fdopendir(dfd);
	int rc = 0;

	if (!dir) {
		close(dfd);
		return -errno;
	}
	while ((d = readdir(dir))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (depth == 0 && !strcmp(d->d_name, w->skip))
			continue;
		if (++w->files > CCACHE_MAX_FILES) {
			rc = -ENOTSUP;
			goto out;
		}
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof(*names));

			if (!nn) {
				rc = -ENOMEM;
				goto out;
			}
			names = nn;
		}
		if (!(names[n] = strdup(d->d_name))) {
			rc = -ENOMEM;
			goto out;
		}
		n++;
	}
	qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n && rc == 0; i++) {
		struct stat st;
		int fd;

		if (snprintf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "", names[i]) >=
		    (int)sizeof(child)) {
			rc = -ENAMETOOLONG;
			break;
		}
		fd = openat(dirfd(dir), names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			rc = errno == ELOOP ? -ENOTSUP : -errno; /* a link: not cached */
			break;
		}
		if (fstat(fd, &st) < 0)
			rc = -errno;
		else if (S_ISDIR(st.st_mode) && depth + 1 < CCACHE_MAX_DEPTH) {
			hash_field(w->s, 'd', child, strlen(child));
			rc = walk_dir(w, fd, child, depth + 1);
			continue; /* walk_dir closed fd */
		} else if (S_ISREG(st.st_mode))
			rc = hash_file(w, fd, child, &st);
		else
			rc = -ENOTSUP;
		close(fd);
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(dir);
	return rc;
}

int ccache_key(struct ccache *c, int root, const char *lang, const char *const *argv,
	       const char *out_name)
{
	char real[PATH_MAX];
	uint8_t digest[32];
	struct sha256 s;
	struct walk w;
	struct stat st;
	int dfd, rc, i;

	c->key[0] = '\0';
	if (c->dir_fd < 0)
		return -ENOTSUP;
	if (!out_name || !out_name[0] || strchr(out_name, '/') || out_name[0] == '.' ||
	    strlen(out_name) >= sizeof(c->out) || !argv || !argv[0] || argv[0][0] != '/')
		return -EINVAL;
	snprintf(c->out, sizeof(c->out), "%s", out_name);
	sha256_init(&s);
	hash_field(&s, 'v', "sbx-ccache-1", 12);
	hash_field(&s, 'l', lang, strlen(lang));
	for (i = 0; argv[i]; i++)
		hash_field(&s, 'a', argv[i], strlen(argv[i]));
	/* The compiler: a host path from the config, never one the program chose. */
	if (!realpath(argv[0], real) || stat(real, &st) < 0)
		return -errno;
	hash_field(&s, 'c', real, strlen(real));
	hash_u64(&s, 'D', (uint64_t)st.st_dev);
	hash_u64(&s, 'I', (uint64_t)st.st_ino);
	hash_u64(&s, 'S', (uint64_t)st.st_size);
	hash_u64(&s, 'M', (uint64_t)st.st_mtim.tv_sec);
	hash_u64(&s, 'N', (uint64_t)st.st_mtim.tv_nsec);
	dfd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	w = (struct walk){.s = &s, .skip = out_name};
	if ((rc = walk_dir(&w, dfd, "", 0)) < 0)
		return rc;
	sha256_final(&s, digest);
	for (i = 0; i < 32; i++)
		sprintf(c->key + 2 * i, "%02x", digest[i]);
	return 0;
}

/* ---- entries ---- */

/* Copy exactly len bytes from in to out. 0 or -errno. */
static int copy_bytes(int in, int out, uint64_t len)
{
	char buf[65536];

	while (len) {
		ssize_t n = read(in, buf, len < sizeof(buf) ? len : sizeof(buf)), off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		while (off < n) {
			ssize_t m = write(out, buf + off, (size_t)(n - off));

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				return m < 0 ? -errno : -EIO;
			off += m;
		}
		len -= (uint64_t)n;
	}
	return 0;
}

static void temp_name(char *buf, size_t len)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	snprintf(buf, len, ".tmp-%016llx", (unsigned long long)r);
}

int ccache_get(struct ccache *c, int root)
{
	char tmp[32];
	struct stat st;
	int in, out, rc;

	if (c->dir_fd < 0 || !c->key[0])
		return 0;
	in = openat(c->dir_fd, c->key, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > CCACHE_MAX_BINARY) {
		close(in);
		return -EINVAL;
	}
	temp_name(tmp, sizeof(tmp));
	out = openat(root, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	rc = copy_bytes(in, out, (uint64_t)st.st_size);
	if (rc == 0 && fchmod(out, 0755) < 0)
		rc = -errno;
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	/* rename() replaces the name itself: a link left at out_name is never followed. */
	if (rc == 0 && renameat(root, tmp, root, c->out) < 0)
		rc = -errno;
	if (rc < 0)
		(void)unlinkat(root, tmp, 0);
	else
		(void)futimens(in, NULL); /* used now: the last to go */
	close(in);
	return rc < 0 ? rc : 1;
}

struct entry {
	char name[72];
	struct timespec mtime;
	uint64_t bytes;
};

static int cmp_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

/* Remove the least recently used entries until the client's are within max_bytes, and temp
 * files a crashed writer left (older than an hour). */
static void evict(struct ccache *c)
{
	struct entry *e = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *d;
	int fd = dup(c->dir_fd);
	DIR *dir;

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(dir);
	while ((d = readdir(dir))) {
		struct stat st;

		if (d->d_name[0] == '.' && strncmp(d->d_name, ".tmp-", 5))
			continue;
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (d->d_name[0] == '.') {
			if (st.st_mtime < time(NULL) - 3600)
				(void)unlinkat(dirfd(dir), d->d_name, 0);
			continue;
		}
		if (!S_ISREG(st.st_mode) || strlen(d->d_name) >= sizeof(e[0].name))
			continue;
		if (n == cap) {
			struct entry *ne = realloc(e, (cap = cap ? cap * 2 : 64) * sizeof(*e));

			if (!ne)
				break;
			e = ne;
		}
		snprintf(e[n].name, sizeof(e[n].name), "%s", d->d_name);
		e[n].mtime = st.st_mtim;
		e[n].bytes = (uint64_t)st.st_blocks * 512 > (uint64_t)st.st_size
				 ? (uint64_t)st.st_blocks * 512
				 : (uint64_t)st.st_size;
		total += e[n++].bytes;
	}
	qsort(e, n, sizeof(*e), cmp_age);
	for (i = 0; i < n && total > c->max_bytes; i++)
		if (unlinkat(dirfd(dir), e[i].name, 0) == 0 || errno == ENOENT)
			total -= e[i].bytes;
	free(e);
	closedir(dir);
}

int ccache_put(struct ccache *c, int root)
{
	uint64_t cap = c->max_bytes < CCACHE_MAX_BINARY ? c->max_bytes : CCACHE_MAX_BINARY;
	char tmp[32];
	struct stat st;
	int in, out, rc;

	if (c->dir_fd < 0 || !c->key[0])
		return -ENOTSUP;
	/* The compile has ended: nothing of it runs any more. Still, the name is the program's. */
	in = openat(root, c->out, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > cap) {
		close(in);
		return -EINVAL;
	}
	temp_name(tmp, sizeof(tmp));
	out = openat(c->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	rc = copy_bytes(in, out, (uint64_t)st.st_size);
	close(in);
	if (rc == 0 && fdatasync(out) < 0)
		rc = -errno;
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(c->dir_fd, tmp, c->dir_fd, c->key) < 0)
		rc = -errno;
	if (rc < 0) {
		(void)unlinkat(c->dir_fd, tmp, 0);
		return rc;
	}
	evict(c);
	return 0;
}
