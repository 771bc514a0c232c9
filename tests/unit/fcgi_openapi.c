/* fcgi_openapi.c: fcgi/openapi.json and the route table describe the same routes, methods and
 * auth; GET /v1/openapi.json serves that document. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../../fcgi/handlers/handlers.h"
#include "../lib/tap.h"

int main(void)
{
	char err[512], path[256], method[16];
	struct json_object *doc = info_openapi_load(err, sizeof(err)), *paths = NULL;
	size_t i, ops = 0, matched = 0;

	TAP_OK(doc != NULL, "fcgi/openapi.json parses%s%s", doc ? "" : ": ", doc ? "" : err);
	if (!doc)
		return tap_done();
	TAP_OK(json_object_object_get_ex(doc, "paths", &paths), "it has paths");
	{
		struct json_object *info = NULL, *ver = NULL;

		TAP_OK(json_object_object_get_ex(doc, "info", &info) &&
			   json_object_object_get_ex(info, "version", &ver) &&
			   strcmp(json_object_get_string(ver), SBX_VERSION) == 0,
		       "info.version is the service's version (%s)", SBX_VERSION);
	}
	for (i = 0; i < route_count; i++) {
		const struct route *rt = &route_table[i];
		struct json_object *item, *op, *sec;
		const char *src = rt->pattern;
		size_t o = 0, k;
		bool open_route;

		/* "{path...}" is OpenAPI's "{path}". */
		for (; *src && o + 1 < sizeof(path); src++) {
			if (strncmp(src, "...}", 4) == 0) {
				path[o++] = '}';
				src += 3;
			} else {
				path[o++] = *src;
			}
		}
		path[o] = '\0';
		for (k = 0; rt->method[k] && k + 1 < sizeof(method); k++)
			method[k] = (char)tolower((unsigned char)rt->method[k]);
		method[k] = '\0';
		if (!json_object_object_get_ex(paths, path, &item) ||
		    !json_object_object_get_ex(item, method, &op)) {
			TAP_OK(0, "%s %s is documented", rt->method, rt->pattern);
			continue;
		}
		matched++;
		open_route = json_object_object_get_ex(op, "security", &sec) &&
			     json_object_array_length(sec) == 0;
		if (open_route != !(rt->flags & ROUTE_AUTH))
			TAP_OK(0, "%s %s: documented auth matches the table", rt->method,
			       rt->pattern);
	}
	TAP_OK(matched == route_count, "every one of the %zu routes is documented (%zu)",
	       route_count, matched);
	json_object_object_foreach(paths, p, item)
	{
		json_object_object_foreach(item, m, op)
		{
			(void)op;
			(void)p;
			(void)m;
			ops++;
		}
	}
	TAP_OK(ops == route_count, "the document has no route the table lacks (%zu operations)",
	       ops);
	{
		struct api_req req;
		struct api_resp resp;

		memset(&req, 0, sizeof(req));
		api_resp_init(&resp);
		h_openapi(&req, &resp);
		TAP_OK(resp.status == 200 && resp.json && json_object_equal(resp.json, doc),
		       "GET /v1/openapi.json serves the file");
		api_resp_free(&resp);
	}
	json_object_put(doc);
	return tap_done();
}
