/* fcgi_seed_compat.c: the seed routes' compatibility rules: the seed's lexical path normalisation
 * stays inside the session, "detail" mirrors the error message, and the default wall limit of
 * seed runs sits under the client's timeout. */
#include <stdlib.h>
#include <string.h>

#include "../../fcgi/handlers/handlers.h"
#include "../../fcgi/handlers/seed_compat.h"
#include "../lib/tap.h"

/* Normalise in; 1 when the result is want (NULL: refused). */
static int norm_is(const char *in, const char *want)
{
	size_t len = 0;
	char *got = seed_path_normalise(in, strlen(in), &len);
	int same = want ? got && len == strlen(want) && strcmp(got, want) == 0 : !got;

	if (!same)
		TAP_DIAG("%s -> %s (want %s)", in, got ? got : "NULL", want ? want : "NULL");
	free(got);
	return same;
}

int main(void)
{
	static const char *const inside[][2] = {
	    {"./x.py", "x.py"},	  {"a//b", "a/b"}, {"d/../e", "e"},	    {"a/./b/", "a/b"},
	    {"a/b/../../c", "c"}, {"x", "x"},	   {".//a/.//b//.", "a/b"}, {"a/../b/../c", "c"},
	    {"a/b/..", "a"},	  {"...", "..."},  {"..a/b..", "..a/b.."},
	};
	static const char *const outside[] = {
	    "../x", "d/../../x", "..",		"./..", "a/./../../x", ".",
	    "./",   "",		 "/etc/passwd", "//x",	"a/..",	       "a/b/../../..",
	};
	struct api_resp resp;
	struct sbx_limits lim = {.wall_ms = 10000};
	struct json_object *limits, *v;
	size_t i, len = 0;
	char *p;
	int all = 1;

	for (i = 0; i < sizeof inside / sizeof inside[0]; i++)
		all &= norm_is(inside[i][0], inside[i][1]);
	TAP_OK(all, "./x.py, a//b, d/../e and the like normalise to the path inside the session");
	all = 1;
	for (i = 0; i < sizeof outside / sizeof outside[0]; i++)
		all &= norm_is(outside[i], NULL);
	TAP_OK(all, "paths that climb out, are absolute or end up empty are refused");
	TAP_OK(!seed_path_normalise("a\0b", 3, &len), "a NUL inside is refused");

	api_resp_init(&resp);
	p = seed_path("a/../../x", 9, "rel_path", &len, &resp);
	TAP_OK(!p && resp.status == 400 && resp.error_code &&
		   strcmp(resp.error_code, "malformed_path") == 0,
	       "seed_path: an escape is 400 malformed_path");
	api_resp_free(&resp);
	api_resp_init(&resp);
	p = seed_path("./.sbx-tmp-x", 12, "rel_path", &len, &resp);
	TAP_OK(!p && resp.status == 400, "seed_path: /v1's rules still hold after normalising");
	api_resp_free(&resp);
	api_resp_init(&resp);
	p = seed_path("./d//f.txt", 10, "rel_path", &len, &resp);
	TAP_OK(p && strcmp(p, "d/f.txt") == 0 && len == 7 && resp.status == 0,
	       "seed_path: a good path comes back normalised, resp untouched");
	free(p);
	api_resp_free(&resp);

	api_resp_init(&resp);
	api_error(&resp, 404, "not_found", "rel_path", "No file \"%s\".", "x");
	seed_error_detail(&resp);
	TAP_OK(json_object_object_get_ex(resp.json, "detail", &v) &&
		   strcmp(json_object_get_string(v), "No file \"x\".") == 0 &&
		   json_object_object_get_ex(resp.json, "error", NULL),
	       "detail is the error's message, beside the envelope");
	api_resp_free(&resp);
	api_resp_init(&resp);
	api_json(&resp, 200, json_object_new_object());
	seed_error_detail(&resp);
	TAP_OK(!json_object_object_get_ex(resp.json, "detail", NULL), "a success gets no detail");
	api_resp_free(&resp);

	seed_run_limits(NULL, &lim);
	TAP_OK(lim.wall_ms == SEED_DEFAULT_WALL_MS && SEED_DEFAULT_WALL_MS < SEED_CLIENT_TIMEOUT_MS,
	       "without limits a seed run gets a wall limit under the client's timeout");
	lim.wall_ms = 20000;
	limits = json_tokener_parse("{\"wall_ms\": 20000}");
	seed_run_limits(limits, &lim);
	TAP_OK(lim.wall_ms == 20000, "an explicit wall_ms is kept");
	json_object_put(limits);
	return tap_done();
}
