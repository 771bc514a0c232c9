/* ccache.h: the compile cache (ccache.c): binaries of compiled languages kept per client under
 * state_dir/ccache/<client-key>/<sha256 hex>, so the same source, compiler and flags skip the
 * compile run. Part of the store: no HTTP, no JSON, no config (the handlers fill it in). */
#ifndef SBX_STORE_CCACHE_H
#define SBX_STORE_CCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CCACHE_MAX_FILES 4096		 /* entries of a work dir that is hashed; more: no cache */
#define CCACHE_MAX_SOURCE (64u << 20)	 /* bytes of a work dir that is hashed; more: no cache */
#define CCACHE_MAX_DEPTH 16		 /* directory depth of a work dir that is hashed */
#define CCACHE_MAX_BINARY (256ull << 20) /* largest binary kept (and max_bytes bounds it too) */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[32]);

struct ccache {
	int dir_fd;	    /* state_dir/ccache/<client-key>, readable; -1: off */
	uint64_t max_bytes; /* the client's entries together */
	char key[65];	    /* hex sha256 of the inputs; "" until ccache_key succeeded */
	char out[64];	    /* the binary's name in the work dir ("main") */
};

/* Open (making it, 0700) the cache directory of client under state_dir. 0, or -errno (c->dir_fd
 * stays -1: every later call is a miss). max_bytes 0: off (-ENOTSUP). */
int ccache_open(const char *state_dir, const char *client, uint64_t max_bytes, struct ccache *c);
void ccache_close(struct ccache *c);

/* The key of a compile in the work dir root (any fd of it, O_PATH is enough): sha256 of the
 * language id, the compiler's argv, the compiler binary's identity (its resolved path, device,
 * inode, size and mtime) and every file and directory under root (names, sizes, bytes, in name
 * order) but the binary out_name itself. A work dir holding anything else than regular files and
 * directories (a link, a FIFO) or more than the CCACHE_MAX_* is not cached (-ENOTSUP). Never
 * follows a link. 0, or -errno. */
int ccache_key(struct ccache *c, int root, const char *lang, const char *const *argv,
	       const char *out_name);

/* Look the key up; on a hit, place a copy of the binary (0755) as root/out_name, replacing what is
 * there (never following it), and mark the entry used. 1 hit, 0 miss, or -errno (a miss too). */
int ccache_get(struct ccache *c, int root);

/* After a compile that succeeded and has ended: copy root/out_name (opened O_NOFOLLOW, a regular
 * file of at most the cap) into the cache atomically (temp + rename), then evict the least
 * recently used entries past max_bytes. 0, or -errno (nothing kept). */
int ccache_put(struct ccache *c, int root);

#endif
