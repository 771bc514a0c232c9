/* packages.h: what the run handlers use of packages.c. */
#ifndef SBX_PACKAGES_H
#define SBX_PACKAGES_H

#include "handlers.h"

/* The environment of a run in root: PYTHONPATH / NODE_PATH when root holds .packages/python or
 * .packages/node/node_modules. env gets at most max-1 entries and a NULL; returns how many. */
size_t pkg_env(int root, const char **env, size_t max);

/* A stateless layer held for one run: fd names its directory (O_PATH, for sbx_request.layer_fd),
 * lock keeps it from eviction while the run uses it, env makes it importable. */
struct pkg_layer {
	int fd, lock;
	int dir;	 /* the layers' directory (eviction on close) */
	uint64_t cap;	 /* packages.layers_max_mb, bytes */
	const char *env; /* "PYTHONPATH=..." or "NODE_PATH=..." (static) */
};

/* "packages" (names, a JSON array) for lang: the layer built (once, in a sandbox) or found, held
 * in *out for the caller's runs (pkg_layer_close after them). 0 with *info ({layer, cached};
 * caller owns); 1 when the install failed (resp holds the 200 stage "install" result); -1 with
 * resp filled (400 naming an unknown package, 429 too many builds, ...). */
int pkg_layer_open(const struct api_req *req, const struct lang *lang, struct json_object *names,
		   struct pkg_layer *out, struct json_object **info, struct api_resp *resp);
/* Release what pkg_layer_open held (and finish an eviction that had to wait for runs to end).
 * Idempotent; safe on a layer set to {-1, -1, -1, 0, NULL}. */
void pkg_layer_close(struct pkg_layer *l);

/* Add "packages" (what the session installed) to o. */
int pkg_session_list(struct session *s, struct json_object *o);

#endif
