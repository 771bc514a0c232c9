/* compile_cache.h: the compile cache (compile_cache.c) in the compile paths of exec.c and of
 * evaluate (evaluate/compile.c). */
#ifndef SBX_HANDLERS_COMPILE_CACHE_H
#define SBX_HANDLERS_COMPILE_CACHE_H

#include "handlers.h"
#include "../store/ccache.h"

struct h_ccache {
	struct ccache c;
	uint64_t wall_ms; /* the lookup's wall time (hashing and, on a hit, placing the binary) */
};

/* Before a compile in root: 1 when the client's cache held the binary and it is now in root
 * (skip the compile), else 0 (compile, then h_ccache_store). Never fails the request. */
int h_ccache_lookup(const struct api_req *req, int root, const struct lang *lang,
		    const char *const *argv, struct h_ccache *cc);
/* The "compile" object of a hit: status ok, no output, the lookup's wall time. */
struct json_object *h_ccache_json(const struct h_ccache *cc);
/* After a compile that succeeded: keep its binary. */
void h_ccache_store(struct h_ccache *cc, int root);
void h_ccache_close(struct h_ccache *cc);

#endif
