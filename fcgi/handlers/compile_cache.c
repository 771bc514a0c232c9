/* compile_cache.c: the compile cache (store/ccache.c) in the compile path of exec.c. A language
 * is cached when it has a "compile" step and runs the binary it made, "/work/<name>" (c, cpp):
 * the key covers the whole work dir but that binary, the compiler's argv and binary, and the
 * language. Per client (the token's name), bounded by compile_cache.max_mb. */
#include <string.h>
#include <time.h>

#include "compile_cache.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int h_ccache_lookup(const struct api_req *req, int root, const struct lang *lang,
		    const char *const *argv, struct h_ccache *cc)
{
	const char *bin = lang->run && lang->run[0] ? lang->run[0] : "";
	uint64_t t0 = now_ms();
	int hit;

	memset(cc, 0, sizeof(*cc));
	cc->c.dir_fd = -1;
	if (strncmp(bin, "/work/", 6) || strchr(bin + 6, '/') || !req->client || !req->client[0])
		return 0;
	if (ccache_open(req->cfg->state_dir, req->client, req->cfg->ccache_bytes, &cc->c) < 0 ||
	    ccache_key(&cc->c, root, lang->id, argv, bin + 6) < 0)
		return 0;
	hit = ccache_get(&cc->c, root) == 1;
	cc->wall_ms = now_ms() - t0;
	return hit;
}

struct json_object *h_ccache_json(const struct h_ccache *cc)
{
	struct sbx_result res;

	memset(&res, 0, sizeof(res));
	res.status = SBX_OK;
	res.out = res.err = (char *)"";
	res.wall_ms = cc->wall_ms;
	return run_result_json(&res, false);
}

void h_ccache_store(struct h_ccache *cc, int root)
{
	(void)ccache_put(&cc->c, root);
}

void h_ccache_close(struct h_ccache *cc)
{
	ccache_close(&cc->c);
}
