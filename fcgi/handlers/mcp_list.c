/* mcp_list.c: the MCP tool list, built once per process from the tool definitions
 * (mcp_tools.json, also the source of GET /v1/tools) and the configuration (languages and
 * limits named in the descriptions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

/* The tool definitions, fcgi/handlers/mcp_tools.json, embedded at build time (a JSON file reads
 * and diffs better than an escaped C string, and tests can load it). Shared sub-schemas are under
 * "fragments" and referenced as the strings "@limits", "@run", "@session" (expand()). */
__asm__(".section .rodata\n"
	".hidden mcp_tools_json\n"
	".globl mcp_tools_json\n"
	"mcp_tools_json:\n"
	".incbin \"fcgi/handlers/mcp_tools.json\"\n"
	".byte 0\n"
	".previous\n");
extern const char mcp_tools_json[];

/* Replace every "@name" string value below v by a copy of the named fragment. */
static void expand(struct json_object *v, struct json_object *limits, struct json_object *run,
		   struct json_object *session)
{
	if (json_object_is_type(v, json_type_array)) {
		size_t i;

		for (i = 0; i < json_object_array_length(v); i++)
			expand(json_object_array_get_idx(v, i), limits, run, session);
		return;
	}
	if (!json_object_is_type(v, json_type_object))
		return;
	json_object_object_foreach(v, key, val)
	{
		struct json_object *with = NULL, *copy = NULL;
		const char *s;

		if (!json_object_is_type(val, json_type_string)) {
			expand(val, limits, run, session);
			continue;
		}
		s = json_object_get_string(val);
		if (strcmp(s, "@limits") == 0)
			with = limits;
		else if (strcmp(s, "@run") == 0)
			with = run;
		else if (strcmp(s, "@session") == 0)
			with = session;
		if (with && json_object_deep_copy(with, &copy, NULL) == 0)
			json_object_object_add(v, key, copy);
	}
}

/* "wall 10 s, CPU 5 s, memory 256 MiB, output 64 KiB per stream" for l. */
static void limits_text(const struct sbx_limits *l, char *out, size_t n)
{
	snprintf(out, n, "wall %llu ms, CPU %llu ms, memory %llu MiB, output %llu bytes per stream",
		 (unsigned long long)l->wall_ms, (unsigned long long)l->cpu_ms,
		 (unsigned long long)(l->memory_bytes >> 20), (unsigned long long)l->output_bytes);
}

/* desc with @LANGS, @LIMITS and @MAXIMA filled in. Caller frees. */
static char *fill_description(const char *desc, const char *langs, const char *defaults,
			      const char *maxima)
{
	size_t cap = strlen(desc) + 4 * (strlen(langs) + strlen(defaults) + strlen(maxima)) + 1;
	char *out = malloc(cap), *o = out;

	if (!out)
		return NULL;
	while (*desc) {
		const char *with = NULL;
		size_t skip = 0;

		if (strncmp(desc, "@LANGS", 6) == 0)
			with = langs, skip = 6;
		else if (strncmp(desc, "@LIMITS", 7) == 0)
			with = defaults, skip = 7;
		else if (strncmp(desc, "@MAXIMA", 7) == 0)
			with = maxima, skip = 7;
		if (with && (size_t)(o - out) + strlen(with) < cap) {
			o = stpcpy(o, with);
			desc += skip;
		} else if ((size_t)(o - out) + 1 < cap) {
			*o++ = *desc++;
		} else {
			break;
		}
	}
	*o = '\0';
	return out;
}

struct json_object *mcp_tools_list(const struct config *cfg)
{
	static struct json_object *tools;
	struct json_object *doc, *list = NULL, *frags = NULL, *limits = NULL, *run = NULL,
				 *session = NULL;
	char langs[1024] = "", defaults[160], maxima[160];
	size_t i;

	if (tools)
		return tools;
	for (i = 0; i < cfg->nlangs; i++) {
		size_t have = strlen(langs);

		snprintf(langs + have, sizeof(langs) - have, "%s%s", i ? ", " : "",
			 cfg->langs[i].id);
	}
	limits_text(&cfg->defaults, defaults, sizeof(defaults));
	limits_text(&cfg->maxima, maxima, sizeof(maxima));
	doc = json_tokener_parse(mcp_tools_json);
	if (!doc || !json_object_object_get_ex(doc, "fragments", &frags) ||
	    !json_object_object_get_ex(doc, "tools", &list) ||
	    !json_object_is_type(list, json_type_array))
		goto out;
	json_object_object_get_ex(frags, "limits", &limits);
	json_object_object_get_ex(frags, "run", &run);
	json_object_object_get_ex(frags, "session", &session);
	expand(list, limits, run, session);
	for (i = 0; i < json_object_array_length(list); i++) {
		struct json_object *t = json_object_array_get_idx(list, i), *d;
		char *filled;

		if (!json_object_object_get_ex(t, "description", &d))
			continue;
		filled = fill_description(json_object_get_string(d), langs, defaults, maxima);
		if (filled)
			json_object_object_add(t, "description", json_object_new_string(filled));
		free(filled);
	}
	tools = json_object_get(list);
out:
	json_object_put(doc);
	return tools;
}
