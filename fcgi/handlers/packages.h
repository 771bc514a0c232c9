/* packages.h: what the run handlers use of packages.c. */
#ifndef SBX_PACKAGES_H
#define SBX_PACKAGES_H

#include "handlers.h"

/* The environment of a run in root: PYTHONPATH / NODE_PATH when root holds .packages/python or
 * .packages/node/node_modules. env gets at most max-1 entries and a NULL; returns how many. */
size_t pkg_env(int root, const char **env, size_t max);

/* Execute's "packages" (names, a JSON array) for lang: the layer built (once, in a sandbox) or
 * found, copied into root/.packages/<language>. 0 with *info ({layer, cached}; caller owns);
 * 1 when the install failed (resp holds the 200 stage "install" result); -1 with resp filled. */
int pkg_layer_attach(const struct api_req *req, const struct lang *lang, struct json_object *names,
		     int root, struct json_object **info, struct api_resp *resp);

/* Add "packages" (what the session installed) to o. */
int pkg_session_list(struct session *s, struct json_object *o);

#endif
