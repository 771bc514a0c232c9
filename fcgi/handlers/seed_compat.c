/* seed_compat.c: the seed routes' compatibility rules (seed_compat.h). Kept apart from the
 * handlers so /v1's strict rules and these lenient ones never share a code path by accident. */
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "seed_compat.h"

void seed_error_detail(struct api_resp *resp)
{
	struct json_object *err = NULL, *msg = NULL;

	if (!resp->json || resp->status < 400 ||
	    !json_object_is_type(resp->json, json_type_object) ||
	    !json_object_object_get_ex(resp->json, "error", &err) ||
	    !json_object_object_get_ex(err, "message", &msg) ||
	    !json_object_is_type(msg, json_type_string) ||
	    json_object_object_get_ex(resp->json, "detail", NULL))
		return;
	json_object_object_add(resp->json, "detail", json_object_get(msg));
}

char *seed_path_normalise(const char *path, size_t len, size_t *outlen)
{
	char *out;
	size_t o = 0, i = 0;

	if (!path || len == 0 || path[0] == '/' || memchr(path, '\0', len))
		return NULL;
	if (!(out = malloc(len + 1)))
		return NULL;
	/* out holds the normalised prefix; a ".." drops its last segment, or fails when there is
	 * none: that is the path leaving the session, whatever comes after. */
	while (i < len) {
		const char *seg = path + i;
		const char *slash = memchr(seg, '/', len - i);
		size_t n = slash ? (size_t)(slash - seg) : len - i;

		i += n + 1;
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			if (o == 0) {
				free(out);
				return NULL;
			}
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, seg, n);
		o += n;
	}
	if (o == 0) {
		free(out);
		return NULL;
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

char *seed_path(const char *path, size_t len, const char *field, size_t *outlen,
		struct api_resp *resp)
{
	char *norm = seed_path_normalise(path, len, outlen);

	if (norm && fs_path_check(norm, *outlen) == 0)
		return norm;
	free(norm);
	api_error(
	    resp, 400, "malformed_path", field,
	    "\"%.200s\" must be a relative path that stays inside the session (\"..\" may not "
	    "climb above its root), at most %d bytes (%d per segment); names beginning "
	    "\"" FS_UPLOAD_PREFIX "\" are reserved.",
	    path ? path : "", SESSION_PATH_MAX, SESSION_NAME_MAX);
	return NULL;
}

void seed_run_limits(struct json_object *limits, struct sbx_limits *lim)
{
	if (limits && json_object_object_get_ex(limits, "wall_ms", NULL))
		return;
	if (lim->wall_ms > SEED_DEFAULT_WALL_MS)
		lim->wall_ms = SEED_DEFAULT_WALL_MS;
}
