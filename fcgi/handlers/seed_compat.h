/* seed_compat.h: what the seed routes do differently from /v1 so that basic-code-exec's own
 * Python client works unchanged: FastAPI's "detail" in errors, its lexical path normalisation
 * (inside the session only), and default limits under the client's timeout. */
#ifndef SBX_SEED_COMPAT_H
#define SBX_SEED_COMPAT_H

#include <stddef.h>

#include "../http/api.h"

/* The client's default httpx timeout (ReplClient(timeout=10.0)), and the seed runs' default
 * wall limit, under it by enough for the sandbox's start-up and the response to arrive: a run
 * that outlives it still comes back with its partial output before the client gives up. */
#define SEED_CLIENT_TIMEOUT_MS 10000
#define SEED_DEFAULT_WALL_MS 8000

/* Add "detail" (the error's message, as FastAPI's HTTPException gives it) beside "error" when
 * resp holds an error envelope; anything else is left alone. */
void seed_error_detail(struct api_resp *resp);

/* The seed's path normalisation, done lexically (no file system is looked at, so no symlink is
 * ever followed): empty and "." segments dropped, ".." removes the segment before it. Returns a
 * malloc'ed path the caller frees, with its length in *outlen; NULL when the result would leave
 * the session or be empty, or the input is absolute or holds a NUL (the caller then checks the
 * original with fs_path_check(), which rejects it with the usual 400). */
char *seed_path_normalise(const char *path, size_t len, size_t *outlen);

/* A request path for a seed route: normalised as above, then held to /v1's rules (length, segment
 * length, reserved names). Returns the malloc'ed path the caller frees (its length in *outlen), or
 * NULL with a 400 malformed_path naming field filled. */
char *seed_path(const char *path, size_t len, const char *field, size_t *outlen,
		struct api_resp *resp);

/* A seed run's limits: the parsed limits with the wall limit lowered to SEED_DEFAULT_WALL_MS
 * unless the request set "wall_ms" itself (limits may be NULL). */
void seed_run_limits(struct json_object *limits, struct sbx_limits *lim);

#endif
